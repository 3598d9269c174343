package daemon

import (
	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/board/boardlimits"
)

// addWebFlags adds the flags of the board's listener (web board and
// /metrics) to `harn node`.
func addWebFlags(c *cobra.Command) {
	f := c.Flags()
	f.String("http-token-file", "", "`file` holding the token the board and /metrics require (mode 0600; keeps it out of ps); default: --http-token, else one generated into <data-dir>/http.token")
	f.String("http-token", "", "the `token` the board and /metrics require; it shows in ps, so prefer --http-token-file (default: one generated into <data-dir>/http.token)")
	f.String("http-public-url", "", "the board's `URL` as others reach it (https://harn.example/, behind a proxy): notifications link to it and their Approve and Deny buttons post to it; default: the listen address")
	f.String("metrics-token-file", "", "`file` holding a scrape-only token (mode 0600): a bearer header with it opens GET /metrics and nothing else")
	d := boardlimits.Default
	f.Duration("http-read-timeout", d.ReadTimeout, "bound on reading one board request, headers and body (a slow body is cut there)")
	f.Duration("http-write-timeout", d.WriteTimeout, "bound on writing one board response (an event stream gets it per write)")
	f.Duration("http-idle-timeout", d.IdleTimeout, "close a board connection idle this long between requests")
	f.Int("http-max-streams", d.MaxStreams, "most live event streams the board holds; one more gets 429")
	f.Int("http-max-client-streams", d.MaxClientStreams, "most live event streams of one client address; one more gets 429")
	f.Int("http-max-peer-conns", d.MaxPeerConns, "most board connections one peer (a local user on loopback, else an address) holds before one of its requests proves the token; one more is closed at accept")
}
