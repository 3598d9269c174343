// Package agent is harn's own agent loop. Its room is one turn of a model
// conversation run as a task runtime's executor: the user message goes
// through the context into a model call, the model's tool calls go
// through the runtime's pre-call check (runtime.Begin) into tools.Box and
// back, until the model answers without a tool call. It also holds the
// model providers (OpenAI chat completions, Anthropic Messages), their
// retry policy, the models' token budgets and the token estimate.
//
// Like runtime/exec, it knows nothing of the mesh or of gRPC: the node
// (node/tasks) hosts an Executor per harn session and routes operator
// actions to it. Time comes from util/clock.
package agent
