package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
)

// agentSpec is where and how one agent keeps its hooks: its adapter's
// adapter.SettingsSpec (presence/adapter/all), read once.
type agentSpec struct {
	name   string // the agent name in `harn hook <name>`
	dir    string // the config folder under home or the project
	file   string
	events []string // the native events harn registers
	// flat hooks are {"event": [{"command": ...}]} (adapter.LayoutFlat);
	// the others are {"event": [{"matcher"?: ..., "hooks": [handler]}]}.
	flat bool
	// matcher and handlerName are the group's matcher and the handler's
	// name ("" writes none).
	matcher, handlerName string
	// unit is the unit of the agent's hook timeout; defaultTimeout the
	// agent's own kill limit for an entry without one (0: unknown).
	unit, defaultTimeout time.Duration
	// waits are the events whose hook may wait for an operator; approve
	// the one that waits only with --remote-approve.
	waits   []string
	approve string
	// envDir names the environment variable that moves the agent's user
	// config folder, if any.
	envDir string
	// jsonc: the agent reads its settings with comments.
	jsonc bool
}

// specs are the installable agents' specs, by name, read on first use (a
// hook that installs nothing does not pay for them).
var specs = sync.OnceValue(agentSpecs)

func agentSpecs() map[string]agentSpec {
	out := map[string]agentSpec{}
	for _, n := range all.Installable() {
		is, _ := all.Install(n)
		s := is.Settings
		out[n] = agentSpec{name: n, dir: s.Dir, file: s.File, events: s.Events, flat: s.Layout == adapter.LayoutFlat,
			matcher: s.Matcher, handlerName: s.HandlerName, unit: s.Unit, defaultTimeout: s.DefaultTimeout,
			waits: s.Waits, approve: s.ApproveEvent, envDir: s.EnvDir, jsonc: s.JSONC}
	}
	return out
}

// entry is harn's entry for one event, given the command and its timeout
// in the agent's unit (nil: none, in a flat file only).
func (s agentSpec) entry(cmd string, timeout json.RawMessage) object {
	if s.flat {
		o := object{{"command", str(cmd)}}
		if timeout != nil {
			o = append(o, member{"timeout", timeout})
		}
		return o
	}
	var h object
	if s.handlerName != "" {
		h = append(h, member{"name", str(s.handlerName)})
	}
	h = append(h, member{"type", str("command")}, member{"command", str(cmd)}, member{"timeout", timeout})
	var g object
	if s.matcher != "" {
		g = append(g, member{"matcher", str(s.matcher)})
	}
	return append(g, member{"hooks", rawArray([]json.RawMessage{h.raw()})})
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

// waitOf is the longest wait of cmd's hook at event: a task's
// confirmation at one of the agent's waiting events, a remote approval at
// its permission request (with --remote-approve); 0 when it never waits.
func (s agentSpec) waitOf(event, cmd string) time.Duration {
	switch {
	case slices.Contains(s.waits, event):
	case event == s.approve && hasFlag(cmd, "--remote-approve"):
	default:
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

// Agents lists the agents whose hooks can be installed.
func Agents() []string {
	out := make([]string, 0, len(specs()))
	for n := range specs() {
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
	return shellWord(bin) + " hook " + agent
}

// shellWord is bin as one shell word: double-quoted when it holds spaces
// or shell characters.
func shellWord(bin string) string {
	if strings.ContainsAny(bin, " \t\"'$`\\|&;<>()*?[]#~!{}") {
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`")
		bin = `"` + r.Replace(bin) + `"`
	}
	return bin
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
// changed at all (a flat file's "version" may be all that is missing).
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
