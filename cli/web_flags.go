package cli

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node"
	"github.com/harn-dev/harn/node/board"
)

// addWebFlags adds the flags of the board's listener (web board and
// /metrics) to `harn node`.
func addWebFlags(c *cobra.Command) {
	f := c.Flags()
	f.String("http-token-file", "", "`file` holding the token the board and /metrics require (mode 0600; keeps it out of ps); default: --http-token, else one generated into <data-dir>/http.token")
	f.String("http-token", "", "the `token` the board and /metrics require; it shows in ps, so prefer --http-token-file (default: one generated into <data-dir>/http.token)")
	f.String("metrics-token-file", "", "`file` holding a scrape-only token (mode 0600): a bearer header with it opens GET /metrics and nothing else")
	d := board.DefaultLimits
	f.Duration("http-read-timeout", d.ReadTimeout, "bound on reading one board request, headers and body (a slow body is cut there)")
	f.Duration("http-write-timeout", d.WriteTimeout, "bound on writing one board response (an event stream gets it per write)")
	f.Duration("http-idle-timeout", d.IdleTimeout, "close a board connection idle this long between requests")
	f.Int("http-max-streams", d.MaxStreams, "most live event streams the board holds; one more gets 429")
	f.Int("http-max-client-streams", d.MaxClientStreams, "most live event streams of one client address; one more gets 429")
}

// webConfig reads the web flags into cfg: the board's token (the file
// first, then --http-token; both is a usage error) and the limits.
func webConfig(c *cobra.Command, cfg *node.Config) error {
	f := c.Flags()
	cfg.HTTPToken, _ = f.GetString("http-token")
	if path, _ := f.GetString("http-token-file"); path != "" {
		if cfg.HTTPToken != "" {
			return usageErr(errors.New("--http-token and --http-token-file are both set; keep the file (the flag shows in ps)"))
		}
		tok, err := readSecretFile(path)
		if err != nil {
			return err
		}
		cfg.HTTPToken = tok
	}
	if path, _ := f.GetString("metrics-token-file"); path != "" {
		tok, err := readSecretFile(path)
		if err != nil {
			return err
		}
		cfg.Web.MetricsToken = tok
	}
	l := &cfg.Web.Limits
	for _, d := range []struct {
		flag string
		v    *time.Duration
	}{{"http-read-timeout", &l.ReadTimeout}, {"http-write-timeout", &l.WriteTimeout}, {"http-idle-timeout", &l.IdleTimeout}} {
		*d.v, _ = f.GetDuration(d.flag)
		if *d.v <= 0 {
			return usageErr(errors.New("--" + d.flag + " must be a positive duration, e.g. 30s"))
		}
	}
	l.ReadHeaderTimeout = min(board.DefaultLimits.ReadHeaderTimeout, l.ReadTimeout)
	for _, n := range []struct {
		flag string
		v    *int
	}{{"http-max-streams", &l.MaxStreams}, {"http-max-client-streams", &l.MaxClientStreams}} {
		*n.v, _ = f.GetInt(n.flag)
		if *n.v <= 0 {
			return usageErr(errors.New("--" + n.flag + " must be at least 1"))
		}
	}
	return nil
}
