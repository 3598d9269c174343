package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/harn-dev/harn/presence/adapter/claudecode"
	"github.com/harn-dev/harn/presence/adapter/codex"
	"github.com/harn-dev/harn/presence/adapter/cursor"
	"github.com/harn-dev/harn/presence/adapter/gemini"
)

// agentSpec is where and how one agent keeps its hooks.
type agentSpec struct {
	name   string // the agent name in `harn hook <name>`
	dir    string // the config folder under home or the project
	file   string
	events []string // the native events harn registers
	// flat hooks are {"event": [{"command": ...}]} (Cursor); the others are
	// {"event": [{"matcher": ..., "hooks": [{"type": "command", ...}]}]}.
	flat bool
	// entry is harn's entry for one event, given the command and its
	// timeout in the agent's unit (nil: none).
	entry func(cmd string, timeout json.RawMessage) object
	// unit is the unit of the agent's hook timeout; defaultTimeout the
	// agent's own kill limit for an entry without one (0: unknown).
	unit, defaultTimeout time.Duration
	// waits are the events whose hook may wait for an operator.
	waits []string
	// envDir names the environment variable that moves the agent's user
	// config folder (CLAUDE_CONFIG_DIR, CODEX_HOME), if any.
	envDir string
	// jsonc: the agent reads its settings with comments (Gemini CLI).
	jsonc bool
}

var specs = map[string]agentSpec{
	claudecode.Name: {name: claudecode.Name, dir: ".claude", file: "settings.json", events: claudecode.Events(), envDir: "CLAUDE_CONFIG_DIR",
		unit: time.Second, defaultTimeout: 600 * time.Second,
		waits: []string{"PreToolUse", "PermissionRequest"},
		entry: func(cmd string, timeout json.RawMessage) object {
			return object{{"matcher", str("*")}, {"hooks", handlers(cmd, timeout)}}
		}},
	codex.Name: {name: codex.Name, dir: ".codex", file: "hooks.json", events: codex.Events(), envDir: "CODEX_HOME",
		unit: time.Second, defaultTimeout: 600 * time.Second,
		waits: []string{"PreToolUse", "PermissionRequest"},
		// No matcher: Codex reads it as a regular expression; absent matches all.
		entry: func(cmd string, timeout json.RawMessage) object { return object{{"hooks", handlers(cmd, timeout)}} }},
	cursor.Name: {name: cursor.Name, dir: ".cursor", file: "hooks.json", events: cursor.Events(), flat: true,
		// Cursor's timeout is in seconds; only the entries that may wait get
		// one (the others keep Cursor's default).
		unit:  time.Second,
		waits: []string{cursor.PreToolUse, cursor.BeforeShellExecution, cursor.BeforeMCPExecution},
		entry: func(cmd string, timeout json.RawMessage) object {
			o := object{{"command", str(cmd)}}
			if timeout != nil {
				o = append(o, member{"timeout", timeout})
			}
			return o
		}},
	gemini.Name: {name: gemini.Name, dir: ".gemini", file: "settings.json", events: gemini.Events(), jsonc: true,
		// Gemini's timeout is in milliseconds.
		unit: time.Millisecond, defaultTimeout: 60 * time.Second,
		waits: []string{gemini.BeforeTool},
		entry: func(cmd string, timeout json.RawMessage) object {
			h := object{{"name", str("harn")}, {"type", str("command")}, {"command", str(cmd)}, {"timeout", timeout}}
			return object{{"hooks", rawArray([]json.RawMessage{h.raw()})}}
		}},
}

// Timeouts of the entries harn writes.
const (
	// quickTimeout is the kill limit of an entry whose hook never waits:
	// it answers within its latency budget or spools.
	quickTimeout = 10 * time.Second
	// DefaultWait is how long a hook waits for a remote approval or a
	// confirmation when its command names no --approve-wait (the hook's
	// own default).
	DefaultWait = 30 * time.Second
	// TimeoutMargin is what an entry's timeout adds to its hook's longest
	// wait: the hook's own start, its question to the node and its answer.
	TimeoutMargin = 15 * time.Second
)

// waitOf is the longest wait of cmd's hook at event: a remote approval at
// a permission request (with --remote-approve; Codex also checks a task's
// calls there), a task's confirmation before a tool call; 0 when it never
// waits.
func (s agentSpec) waitOf(event, cmd string) time.Duration {
	if !slices.Contains(s.waits, event) {
		return 0
	}
	if event == "PermissionRequest" && s.name != codex.Name && !hasFlag(cmd, "--remote-approve") {
		return 0
	}
	return CommandWait(cmd)
}

func hasFlag(cmd, flag string) bool {
	for _, a := range strings.Fields(cmd) {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// timeoutFor is the timeout harn writes for event's entry running cmd,
// in the agent's unit; nil writes none (the agent's default applies).
func (s agentSpec) timeoutFor(event, cmd string) json.RawMessage {
	d := quickTimeout
	if w := s.waitOf(event, cmd); w > 0 {
		d = w + TimeoutMargin
	} else if s.flat {
		return nil
	}
	n := (d + s.unit - 1) / s.unit
	return json.RawMessage(fmt.Sprint(int64(n)))
}

// CommandWait is the longest wait of a harn hook command: its
// --approve-wait, else the hook's default.
func CommandWait(cmd string) time.Duration {
	f := strings.Fields(cmd)
	for i, a := range f {
		v, ok := strings.CutPrefix(a, "--approve-wait=")
		if !ok && a == "--approve-wait" && i+1 < len(f) {
			v, ok = f[i+1], true
		}
		if ok {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				return d
			}
		}
	}
	return DefaultWait
}

// handlers is the one-element handler list of the Claude-shaped files.
func handlers(cmd string, timeout json.RawMessage) json.RawMessage {
	h := object{{"type", str("command")}, {"command", str(cmd)}, {"timeout", timeout}}
	return rawArray([]json.RawMessage{h.raw()})
}

// Agents lists the agents whose hooks can be installed.
func Agents() []string {
	out := make([]string, 0, len(specs))
	for n := range specs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// errShape is a settings file that is JSON but not of the expected shape.
var errShape = errors.New("unexpected shape")

func shapeErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errShape, fmt.Sprintf(format, a...))
}

// isHarn reports whether a hook command is harn's hook for agent.
func isHarn(cmd, agent string) bool {
	cmd = strings.TrimSpace(cmd)
	i := strings.LastIndex(cmd, " hook "+agent)
	if i < 0 {
		return false
	}
	rest := cmd[i+len(" hook "+agent):] // harn's own flags may follow
	return (rest == "" || strings.HasPrefix(rest, " --")) && strings.Contains(cmd, "harn")
}

// hookCommand is the command an agent runs: the binary (quoted when it
// holds spaces or shell characters), "hook" and the agent name.
func hookCommand(bin, agent string) string {
	if strings.ContainsAny(bin, " \t\"'$`\\|&;<>()*?[]#~!{}") {
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`")
		bin = `"` + r.Replace(bin) + `"`
	}
	return bin + " hook " + agent
}

// hooksOf returns the top-level "hooks" object.
func hooksOf(top object) (object, bool, error) {
	raw, ok := top.get("hooks")
	if !ok {
		return nil, false, nil
	}
	h, err := parseObject(raw)
	if err != nil {
		return nil, true, shapeErr(`"hooks" is not an object`)
	}
	return h, true, nil
}

// install adds harn's entry to every event that lacks it and drops stale
// or duplicate harn entries. It returns the events where it added harn's
// entry, those where it replaced harn's entries, and whether the file
// changed at all (Cursor's "version" may be all that is missing).
func (s agentSpec) install(top *object, cmd string) (added, replaced []string, modified bool, err error) {
	hooks, _, err := hooksOf(*top)
	if err != nil {
		return nil, nil, false, err
	}
	for _, ev := range s.events {
		raw, ok := hooks.get(ev)
		list, err := array(raw, ok)
		if err != nil {
			return nil, nil, false, shapeErr("hooks.%s is not a list", ev)
		}
		list, found, dirty := s.strip(list, cmd, s.timeoutFor(ev, cmd))
		switch {
		case dirty: // stale or duplicate harn entries went
			replaced = append(replaced, ev)
		case !found:
			added = append(added, ev)
		}
		if !found {
			list = append(list, s.entry(cmd, s.timeoutFor(ev, cmd)).raw())
			dirty = true
		}
		if dirty {
			hooks.set(ev, rawArray(list))
		}
	}
	modified = len(added)+len(replaced) > 0
	if modified {
		top.set("hooks", hooks.raw())
	}
	if _, ok := top.get("version"); s.flat && !ok {
		top.prepend("version", json.RawMessage("1"))
		modified = true
	}
	return added, replaced, modified, nil
}

// uninstall removes every harn entry for this agent, drops matcher groups
// and event keys that it left empty, and "hooks" itself when it emptied it.
func (s agentSpec) uninstall(top *object) ([]string, error) {
	hooks, present, err := hooksOf(*top)
	if err != nil || !present {
		return nil, err
	}
	var removed []string
	for _, m := range slices.Clone(hooks) {
		list, err := array(m.val, true)
		if err != nil {
			continue // not ours to judge: an unknown key keeps its value
		}
		list, _, dirty := s.strip(list, "", nil)
		if !dirty {
			continue
		}
		if len(list) == 0 {
			hooks.del(m.key)
		} else {
			hooks.set(m.key, rawArray(list))
		}
		removed = append(removed, m.key)
	}
	if len(removed) == 0 {
		return nil, nil
	}
	if len(hooks) == 0 {
		top.del("hooks")
	} else {
		top.set("hooks", hooks.raw())
	}
	return removed, nil
}

// strip removes harn's entries from one event's list, except the first one
// whose command is exactly keep (none when keep is "") and whose timeout is
// at least timeout (any when nil: an entry with a shorter one is stale, its
// agent would kill the hook while it waits). Entries it cannot read are kept
// as they are. found reports whether keep was seen; dirty whether anything
// was removed.
func (s agentSpec) strip(list []json.RawMessage, keep string, timeout json.RawMessage) (out []json.RawMessage, found, dirty bool) {
	take := func(h json.RawMessage) bool { // false drops the handler
		o, err := parseObject(h)
		if err != nil {
			return true
		}
		cmd := stringField(o, "command")
		if !isHarn(cmd, s.name) {
			return true
		}
		if keep != "" && cmd == keep && !found && timeoutCovers(o, timeout) {
			found = true
			return true
		}
		dirty = true
		return false
	}
	for _, item := range list {
		if s.flat {
			if take(item) {
				out = append(out, item)
			}
			continue
		}
		group, err := parseObject(item)
		if err != nil {
			out = append(out, item)
			continue
		}
		raw, ok := group.get("hooks")
		hs, err := array(raw, ok)
		if err != nil {
			out = append(out, item)
			continue
		}
		var kept []json.RawMessage
		for _, h := range hs {
			if take(h) {
				kept = append(kept, h)
			}
		}
		switch {
		case len(kept) == len(hs):
			out = append(out, item) // untouched, byte for byte
		case len(kept) > 0:
			group.set("hooks", rawArray(kept))
			out = append(out, group.raw())
		}
		// A group harn's removal emptied is dropped.
	}
	return out, found, dirty
}

// timeoutCovers reports whether handler o's timeout is at least want (in
// the same unit); a nil want accepts any.
func timeoutCovers(o object, want json.RawMessage) bool {
	if want == nil {
		return true
	}
	have, ok := numberField(o, "timeout")
	if !ok {
		return false
	}
	var w float64
	_ = json.Unmarshal(want, &w)
	return have >= w
}

// numberField is o's field k when it is a JSON number.
func numberField(o object, k string) (float64, bool) {
	raw, ok := o.get(k)
	if !ok {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	return f, true
}
