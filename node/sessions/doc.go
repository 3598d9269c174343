// Package sessions is the node's local half: the room of this node's own
// sessions. It keeps the sessions map (every session's live state, folded
// with the same reducer that replay uses), names new sessions and keeps
// their names unique among the live ones, ingests events (validation, the
// clock guard, the durable append to the ledger, the fold), resolves
// handles, serializes operator mutations per session, and reads the local
// roster.
//
// After each write it tells its subscribers what changed (a Batch), outside
// its lock, in the order they subscribed, in the style of serf's event
// channel: the heartbeat, the cluster's publish, the task host, the
// transcript watcher, the alerts and the metrics are subscribers, wired by
// the node. The room never calls into them.
//
// Name reservations live beside the reducer's states, not in them: a name
// given to a session whose first events are not stored yet is a
// reservation, so every state the Store holds has events. See DESIGN.md in
// this folder.
package sessions
