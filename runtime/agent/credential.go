package agent

import (
	"net/http"
	"os"
	"strings"

	"github.com/openai/openai-go/v3/option"
)

// sessionCredential is the OpenAI client's last word on its request's
// credentials: the session's key, and nothing the SDK took from the
// node's environment. openai-go reads OPENAI_API_KEY and
// OPENAI_CUSTOM_HEADERS on its own (it has no public switch to stop it);
// this drops every header OPENAI_CUSTOM_HEADERS names and sets
// Authorization from the session's key alone (none without one), so a
// credential of the node's never goes to a URL a caller named.
func sessionCredential(key string) option.Middleware {
	names := customHeaderNames(os.Getenv("OPENAI_CUSTOM_HEADERS"))
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		for _, n := range names {
			r.Header.Del(n)
		}
		if key == "" {
			r.Header.Del("Authorization")
		} else {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		return next(r)
	}
}

// customHeaderNames reads the names of OPENAI_CUSTOM_HEADERS' "Name:
// value" lines, as the SDK does.
func customHeaderNames(v string) []string {
	var out []string
	for _, line := range strings.Split(v, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) != "" {
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out
}
