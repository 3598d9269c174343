package meshtrust

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

// The operator's mesh-wide switches over the task runtimes: a global
// revocation of a capability and a disabled provider. In a mesh they live
// in the registry's key-value space, one key per switch, so that every
// node's runtimes apply the same set. This file holds their registry form
// and who may write them; the node applies them to its runtimes.

// SwitchPrefix keys a switch: override/<kind>/<hex of the name>.
const SwitchPrefix = "override/"

// The kinds of switches.
const (
	SwitchCapability = "capability"
	SwitchProvider   = "provider"
)

// ErrBadSwitch refuses a switch with a bad kind or name.
var ErrBadSwitch = errors.New("node: bad capability or provider switch")

// Switch is one switch's registry value. On false records a lifted
// switch (restore, enable), with who lifted it.
type Switch struct {
	Kind   string    `json:"kind"`
	Name   string    `json:"name"`
	On     bool      `json:"on"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// SwitchKey is the registry key of a switch.
func SwitchKey(kind, name string) string {
	return SwitchPrefix + kind + "/" + hex.EncodeToString([]byte(name))
}

// CheckSwitch validates a switch's kind and name: a capability name or
// pattern, or a provider name; printable, no white space, at most 256
// bytes.
func CheckSwitch(kind, name string) error {
	if kind != SwitchCapability && kind != SwitchProvider {
		return fmt.Errorf("%w: kind %q; use capability or provider", ErrBadSwitch, kind)
	}
	if name == "" || len(name) > 256 || !utf8.ValidString(name) || strings.ContainsAny(name, "()") ||
		strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("%w: %s name %q must be 1 to 256 printable bytes without spaces or parentheses", ErrBadSwitch, kind, name)
	}
	return nil
}

// Switches reads the switches among the registry entries (KVList of
// SwitchPrefix), by key; malformed ones are left out.
func Switches(entries []raftstore.KVEntry) map[string]Switch {
	out := map[string]Switch{}
	for _, e := range entries {
		var v Switch
		if json.Unmarshal(e.Value, &v) != nil || CheckSwitch(v.Kind, v.Name) != nil || e.Key != SwitchKey(v.Kind, v.Name) {
			continue
		}
		out[e.Key] = v
	}
	return out
}

// splitBy splits "op@node" at its last '@'.
func splitBy(by string) (op, node string) {
	i := strings.LastIndexByte(by, '@')
	if i < 0 {
		return by, ""
	}
	return by[:i], by[i+1:]
}

// authorizeSwitch admits a forwarded switch write: any verified mesh
// member may set a switch (it only takes authority away), in its own name
// (the value's by ends in "@" and the caller's node). Lifting a switch
// (restore, enable) gives authority back, so only the node that set it or
// a server may lift it. prev reads the switch's current value. ok is
// false when cmd is not switches alone (another rule decides).
func authorizeSwitch(caller trust.Identity, cmd raftstore.Command, prev func(key string) (Switch, bool)) (bool, error) {
	for _, o := range cmd.KV {
		if !strings.HasPrefix(o.Key, SwitchPrefix) {
			return false, nil
		}
	}
	for _, o := range cmd.KV {
		var v Switch
		if o.Delete || o.IfAbsent || o.IfIndex != 0 || json.Unmarshal(o.Value, &v) != nil || o.Key != SwitchKey(v.Kind, v.Name) {
			return true, &trust.RefusalError{Caller: caller, Err: trust.ErrNotOwner, Detail: "a switch is written whole, under its own key"}
		}
		if _, node := splitBy(v.By); node != caller.Name {
			return true, &trust.RefusalError{Caller: caller, Err: trust.ErrNotOwner, Detail: fmt.Sprintf("a switch written by node %q must name it (by %q)", caller.Name, v.By)}
		}
		if v.On || caller.Role == trust.RoleServer || prev == nil {
			continue
		}
		if was, ok := prev(o.Key); ok && was.On {
			if _, setter := splitBy(was.By); setter != caller.Name {
				return true, &trust.RefusalError{Caller: caller, Err: trust.ErrNotOwner,
					Detail: fmt.Sprintf("%s %q was set by %q: only that node or a server may lift it", v.Kind, v.Name, was.By)}
			}
		}
	}
	return true, nil
}
