// Package exec runs an external agent command as the executor of a
// session's task runtime: its room is the agent process of one task at a
// time. It takes each running task from the runtime (Runtime.Next), starts
// the configured command in its own process group with the prompt on
// stdin, relays steers through the agent's streaming input when its driver
// declares one (and queues them as follow-ups otherwise), records the
// agent's user-visible output with Say, and ends the task with Finish.
//
// Cancellation sends SIGINT to the process group, waits the grace period on
// an injected clock, then sends SIGKILL; no process of the group outlives
// its task. How an agent harn knows runs (its command line, input and
// output decoder) is its adapter's (presence/adapter/<agent>, found by
// Detect through presence/adapter/all). The package imports only the
// runtime, util, the adapters and the standard library. See DESIGN.md.
package exec
