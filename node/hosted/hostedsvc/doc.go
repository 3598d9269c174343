// Package hostedsvc is the service of the hosting room (node/hosted):
// it opens the room and answers for it: the Hosted service on the local
// socket (runs, actions, screens, worktrees, routed to the owner node),
// the HostedPeer service on the cluster gRPC for other nodes' calls
// (behind node/operator's gate), the attach upgrade of the local socket
// and its relay to the owner, a row's view of a hosted session, the task
// path's steer and follow-up of a hosted session, and the board's hosted
// pages. It reads the rest of the node through Sessions, Mesh and the
// funcs of Deps, declared here.
package hostedsvc
