package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/harn-dev/harn/cli/install"
	"github.com/harn-dev/harn/presence/adapter/codex"
)

// codexTrust is what Codex's config.toml records of one hook: a trust
// record (trusted_hash) and whether the hook is switched off.
type codexTrust struct {
	trusted, disabled bool
}

// checkCodexTrust: Codex runs a hook from hooks.json only after the user
// trusted it in /hooks, and records that as
// [hooks.state."<hooks.json>:<event_snake>:<group>:<handler>"] with a
// trusted_hash in $CODEX_HOME/config.toml. harn does not recompute Codex's
// hash: a record is taken as trust (a hook changed since shows in /hooks
// as modified).
func checkCodexTrust(e doctorEnv) []check {
	var out []check
	for _, scope := range []string{install.ScopeUser, install.ScopeProject} {
		st, err := install.Inspect(install.Options{Agent: codex.Name, Scope: scope, Home: e.home, ProjectDir: e.wd, Getenv: e.getenv})
		if err != nil || len(st.Hooks) == 0 {
			continue
		}
		home := filepath.Join(e.home, ".codex")
		if d := e.getenv("CODEX_HOME"); d != "" {
			home = d
		}
		cfgPath := filepath.Join(home, "config.toml")
		b, _ := readSmall(cfgPath)
		states := codexHookStates(b)
		var untrusted, disabled []string
		for _, h := range st.Hooks {
			t := lookupCodexTrust(states, st.Path, h)
			label := fmt.Sprintf("%s#%d.%d", h.Event, h.Group, h.Handler)
			switch {
			case t.disabled:
				disabled = append(disabled, label)
			case !t.trusted:
				untrusted = append(untrusted, label)
			}
		}
		name := "codex trust"
		if scope == install.ScopeProject {
			name += " (project)"
		}
		switch {
		case len(untrusted) > 0:
			out = append(out, check{name, checkFinding,
				fmt.Sprintf("%d of harn's %d hooks in %s have no trust record in %s, so Codex skips them", len(untrusted), len(st.Hooks), st.Path, cfgPath),
				"start codex, open /hooks and trust harn's hooks"})
		case len(disabled) > 0:
			out = append(out, check{name, checkFinding,
				fmt.Sprintf("harn's hooks %s are disabled in %s", strings.Join(disabled, ", "), cfgPath),
				"start codex, open /hooks and enable harn's hooks"})
		default:
			out = append(out, check{name, checkOK,
				fmt.Sprintf("each of harn's %d hooks has a trust record in %s (a hook changed since shows in /hooks as modified)", len(st.Hooks), cfgPath), ""})
		}
	}
	return out
}

// lookupCodexTrust finds the record of hook h of hooksPath: keys name the
// file by its path as Codex saw it, which may be the canonical one.
func lookupCodexTrust(states map[string]codexTrust, hooksPath string, h install.HookRef) codexTrust {
	suffix := fmt.Sprintf(":%s:%d:%d", snakeCase(h.Event), h.Group, h.Handler)
	paths := []string{hooksPath}
	if real, err := filepath.EvalSymlinks(hooksPath); err == nil && real != hooksPath {
		paths = append(paths, real)
	}
	for _, p := range paths {
		if t, ok := states[p+suffix]; ok {
			return t
		}
	}
	return codexTrust{}
}

// snakeCase turns Codex's event names into the labels of its trust keys:
// PreToolUse is pre_tool_use.
func snakeCase(s string) string {
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

// codexHookStates reads the hooks.state records of a Codex config.toml:
// tables [hooks.state."KEY"] with trusted_hash and enabled, or the
// inline form "KEY" = { trusted_hash = "…" } under [hooks.state]. It is a
// line reader for these records only, not a TOML parser.
func codexHookStates(cfg []byte) map[string]codexTrust {
	out := map[string]codexTrust{}
	var cur string   // the record of the current [hooks.state."KEY"] table
	inState := false // inside [hooks.state]
	sc := bufio.NewScanner(bytes.NewReader(cfg))
	sc.Buffer(make([]byte, 0, 4096), gitMaxRead)
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
			var t codexTrust
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

func applyTrustField(t *codexTrust, k, v string) {
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
