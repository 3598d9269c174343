package node

import (
	"github.com/harn-dev/harn/node/alerts/notifysvc"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/roster"
)

// WaitPoll is how often a wait looks at the roster (node/roster).
const WaitPoll = roster.WaitPoll

// Wait errors.
var (
	// ErrWaitEnded: the session ended without coming to the state.
	ErrWaitEnded = roster.ErrWaitEnded
	// ErrUnknownWebhook: no webhook of the mesh has that ID.
	ErrUnknownWebhook = notifysvc.ErrUnknownWebhook
)

// NotifyConfig configures notifications (node/alerts/notifysvc).
type NotifyConfig = notifysvc.Config

// The views of `harn notify list`, in wire.
type (
	WebhookView = wire.WebhookView
	DesktopView = wire.DesktopView
)
