// Package notify is the notifications room of the node: it turns changes in
// the sessions a node is responsible for into messages people see, on
// webhooks (json, Slack, Discord, ntfy) and on the local desktop.
//
// The pipeline is transition → debounce → per-webhook queue → sender (see
// DESIGN.md in this folder). Diff is a pure function from two views of one
// session to the transitions worth telling; the Engine debounces them on an
// injected util/clock Clock, renders one message per transition per webhook, and
// delivers each through a bounded queue with retries and backoff.
//
// Exactly once by the owner: the engine tells what it is fed and keeps no
// mesh-wide state. The node must feed it only the sessions it is
// responsible for: its own sessions, and (on the Raft leader only) the
// sessions of nodes that are unreachable, since an unreachable node cannot
// tell anyone about itself. Webhook configurations are mesh-wide, stored in
// the Raft registry through EncodeConfigs and DecodeConfigs, so every node
// holds the same list and each transition is sent by exactly one node.
//
// Every goroutine the package starts belongs to an Engine (one worker per
// webhook, one desktop worker, and the clock's timer callbacks) and ends in
// Engine.Close.
package notify
