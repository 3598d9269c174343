package hosted

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/harn-dev/harn/util/secretenv"
)

// EnvHostedID names the hosted session in its process's environment: the
// agent's hooks forward it (AttrHostedID), and the node ties their events
// to the hosted row after checking that they come from its process tree
// (tie.go).
const EnvHostedID = "HARN_HOSTED_ID"

// scrubEnv is the node's environment as a hosted process gets it: no
// HARN_* variable (the node's secrets and its place; the room adds the
// place back), nothing util/secretenv names a secret (*_TOKEN, *_API_KEY,
// *_KEY, *SECRET*, *PASSWORD*, …: the user's agent brings its own login),
// none of drop.
func scrubEnv(environ, drop []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range secretenv.Without(secretenv.Scrub(environ), drop...) {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(strings.ToUpper(k), "HARN_") {
			out = append(out, kv)
		}
	}
	return out
}

func hasEnv(env []string, k string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

// lookPath finds bin as the hosted process will: an absolute or relative
// path as is, a bare name on environ's PATH.
func lookPath(bin string, environ []string) (string, error) {
	if strings.ContainsRune(bin, filepath.Separator) {
		if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", errors.New("not an executable file")
		}
		return bin, nil
	}
	path := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue // never the current directory
		}
		p := filepath.Join(d, bin)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("not found")
}
