package codex

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/harn-dev/harn/presence/adapter"
)

// maxConfigLine bounds one line of config.toml that the trust reader takes.
const maxConfigLine = 64 << 10

// hookTrust is what Codex's config.toml records of one hook: a trust
// record (trusted_hash) and whether the hook is switched off.
type hookTrust struct {
	trusted, disabled bool
}

// TrustFile is $CODEX_HOME/config.toml, ~/.codex/config.toml by default
// (adapter.HookTruster).
func (hooks) TrustFile(home string, getenv func(string) string) string {
	dir := filepath.Join(home, ".codex")
	if d := getenv("CODEX_HOME"); d != "" {
		dir = d
	}
	return filepath.Join(dir, "config.toml")
}

// CheckTrust (adapter.HookTruster): Codex runs a hook from hooks.json only
// after the user trusted it in /hooks, and records that as
// [hooks.state."<hooks.json>:<event_snake>:<group>:<handler>"] with a
// trusted_hash in config.toml. harn does not recompute Codex's hash: a
// record is taken as trust (a hook changed since shows in /hooks as
// modified).
func (hooks) CheckTrust(records []byte, recordsPath string, paths []string, hs []adapter.HookPlace) adapter.TrustCheck {
	states := hookStates(records)
	var untrusted, disabled []string
	for _, h := range hs {
		t := lookupTrust(states, paths, h)
		label := fmt.Sprintf("%s#%d.%d", h.Event, h.Group, h.Handler)
		switch {
		case t.disabled:
			disabled = append(disabled, label)
		case !t.trusted:
			untrusted = append(untrusted, label)
		}
	}
	switch {
	case len(untrusted) > 0:
		return adapter.TrustCheck{Detail: fmt.Sprintf("%d of harn's %d hooks in %s have no trust record in %s, so Codex skips them", len(untrusted), len(hs), paths[0], recordsPath),
			Fix: "start codex, open /hooks and trust harn's hooks"}
	case len(disabled) > 0:
		return adapter.TrustCheck{Detail: fmt.Sprintf("harn's hooks %s are disabled in %s", strings.Join(disabled, ", "), recordsPath),
			Fix: "start codex, open /hooks and enable harn's hooks"}
	}
	return adapter.TrustCheck{OK: true,
		Detail: fmt.Sprintf("each of harn's %d hooks has a trust record in %s (a hook changed since shows in /hooks as modified)", len(hs), recordsPath)}
}

// lookupTrust finds the record of hook h: keys name the file by its path
// as Codex saw it, which may be the canonical one.
func lookupTrust(states map[string]hookTrust, paths []string, h adapter.HookPlace) hookTrust {
	suffix := fmt.Sprintf(":%s:%d:%d", SnakeCase(h.Event), h.Group, h.Handler)
	for _, p := range paths {
		if t, ok := states[p+suffix]; ok {
			return t
		}
	}
	return hookTrust{}
}

// SnakeCase turns Codex's event names into the labels of its trust keys:
// PreToolUse is pre_tool_use.
func SnakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hookStates reads the hooks.state records of a Codex config.toml, by key:
// tables [hooks.state."KEY"] with trusted_hash and enabled, or the inline
// form "KEY" = { trusted_hash = "…" } under [hooks.state]. It is a line
// reader for these records only, not a TOML parser. The result says, per
// key, whether the hook is trusted and whether it is disabled.
func hookStates(cfg []byte) map[string]hookTrust {
	out := map[string]hookTrust{}
	var cur string   // the record of the current [hooks.state."KEY"] table
	inState := false // inside [hooks.state]
	sc := bufio.NewScanner(bytes.NewReader(cfg))
	sc.Buffer(make([]byte, 0, 4096), maxConfigLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			cur, inState = "", false
			h := strings.TrimSpace(strings.Trim(line, "[]"))
			if rest, ok := strings.CutPrefix(h, "hooks.state."); ok {
				if k, ok := tomlKey(strings.TrimSpace(rest)); ok {
					cur = k
					out[cur] = out[cur]
				}
			} else if h == "hooks.state" {
				inState = true
			}
			continue
		}
		switch {
		case cur != "":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			t := out[cur]
			applyTrustField(&t, strings.TrimSpace(k), strings.TrimSpace(v))
			out[cur] = t
		case inState:
			k, v, ok := strings.Cut(line, "= {")
			if !ok {
				k, v, ok = strings.Cut(line, "={")
			}
			key, kok := tomlKey(strings.TrimSpace(k))
			if !ok || !kok {
				continue
			}
			var t hookTrust
			for _, f := range strings.Split(strings.TrimSuffix(strings.TrimSpace(v), "}"), ",") {
				if fk, fv, ok := strings.Cut(f, "="); ok {
					applyTrustField(&t, strings.TrimSpace(fk), strings.TrimSpace(fv))
				}
			}
			out[key] = t
		}
	}
	return out
}

func applyTrustField(t *hookTrust, k, v string) {
	switch k {
	case "trusted_hash":
		t.trusted = strings.Trim(v, `"'`) != ""
	case "enabled":
		t.disabled = v == "false"
	}
}

// tomlKey reads one quoted TOML key ("…" with escapes, or '…' literal).
func tomlKey(s string) (string, bool) {
	if len(s) < 2 {
		return "", false
	}
	switch s[0] {
	case '\'':
		if i := strings.IndexByte(s[1:], '\''); i >= 0 {
			return s[1 : i+1], true
		}
	case '"':
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				i++
				b.WriteByte(s[i])
			case c == '"':
				return b.String(), true
			default:
				b.WriteByte(c)
			}
		}
	}
	return "", false
}
