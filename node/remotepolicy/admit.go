package remotepolicy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harn-dev/harn/node/tasks/taskwire"
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/subagent"
	"github.com/harn-dev/harn/util/text"
)

// Sessions is what the policy reads of the node's task runtimes.
type Sessions interface {
	// Workdir is the working directory of a session whose tasks reach a
	// loop this node runs (harn's own, or a launcher's agent), by id,
	// prefix or name; ok is false for an external agent's session or an
	// unknown one.
	Workdir(handle string) (dir string, ok bool)
	// Head is the session's running (or blocked) task, "" for none.
	Head(handle string) string
	// SessionOf is a task's session.
	SessionOf(task string) (string, bool)
	// Grants are what a task was given.
	Grants(task string) ([]runtime.Grant, error)
	// SessionGrants are what a session holds for its later tasks; ok is
	// false when it is unknown or holds none yet.
	SessionGrants(handle string) ([]runtime.Grant, bool)
}

// Admit checks an action a caller on another node sends, and fills in
// what the caller may not choose: a new session's workdir (the first
// workspace when none is given), a harn session's provider (this node's),
// a task's grants when none are given (read-only, else the first remote
// profile), named so that the target's own default never applies. Ops
// that give a task no text pass; a pin is admitted as a steer.
func (c Config) Admit(s Sessions, a *taskwire.Action) error {
	switch a.Op {
	case taskwire.OpStart:
		if a.Session == "" {
			wd, err := c.workdir(a.Workdir)
			if err != nil {
				return err
			}
			a.Workdir = wd
			if a.Agent == taskwire.AgentHarn && a.Harn != nil {
				o := *a.Harn
				if err := c.provider(&o); err != nil {
					return err
				}
				a.Harn = &o
			}
		} else if err := c.sessionWorkdir(s, a.Session); err != nil {
			return err
		} else if err := c.held(s, a); err != nil {
			return err
		}
		return c.grants(a)
	case taskwire.OpFollowUp, taskwire.OpSupersede:
		if err := c.sessionWorkdir(s, a.Session); err != nil {
			return err
		}
		if err := c.held(s, a); err != nil {
			return err
		}
		return c.grants(a)
	case taskwire.OpSteer, taskwire.OpPin:
		// A pin is text the session's model reads from its next step on,
		// as a steer's.
		if err := c.sessionWorkdir(s, a.Session); err != nil {
			return err
		}
		// A steer reaches the running turn, or becomes a follow-up with
		// the grants of the turn it names: both must be within.
		for _, t := range []string{s.Head(a.Session), a.Task} {
			if err := c.taskGrants(s, t, "steer"); err != nil {
				return err
			}
		}
	case taskwire.OpReplace:
		if sess, ok := s.SessionOf(a.Task); ok {
			if err := c.sessionWorkdir(s, sess); err != nil {
				return err
			}
		}
		return c.taskGrants(s, a.Task, "replace")
	}
	return nil
}

func (c Config) refused(format string, args ...any) error {
	return fmt.Errorf("%w by node %s: %s", ErrRefused, c.Node, fmt.Sprintf(format, args...))
}

// Workdir is workdir for a caller outside this package: a hosted run
// from another node (node/hosted) passes the same rule as a harn session.
func (c Config) Workdir(dir string) (string, error) { return c.workdir(dir) }

// workdir admits a new session's directory: inside a workspace root
// (symlinks resolved), and neither the data dir nor a secret file's
// place, inside one, nor holding one.
func (c Config) workdir(dir string) (string, error) {
	if len(c.Workspaces) == 0 {
		return "", c.refused("it names no workspace, so no session starts there from another node; its operator names one with --workspace DIR")
	}
	if dir == "" {
		dir = c.Workspaces[0]
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: --workdir %q: give an absolute path on node %s", taskwire.ErrBadAction, text.Clip(dir, 200), c.Node)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = filepath.Clean(dir)
	}
	if err := c.checkWorkdir(real, dir); err != nil {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("%w: --workdir %q is not a directory on node %s", taskwire.ErrBadAction, text.Clip(dir, 200), c.Node)
	}
	return real, nil
}

// checkWorkdir applies the roots and the private paths to real, the
// resolved form of dir (named in the refusal).
func (c Config) checkWorkdir(real, dir string) error {
	in := false
	for _, w := range c.Workspaces {
		in = in || within(real, w)
	}
	if !in {
		roots := strings.Join(c.Workspaces, ", ")
		if roots == "" {
			roots = "none"
		}
		return c.refused("workdir %s is outside its workspaces (%s); a task from another node works only inside one",
			text.Clip(text.OneLine(dir), 200), text.Clip(text.OneLine(roots), 400))
	}
	for _, p := range c.Private {
		if within(real, p) || within(p, real) {
			return c.refused("workdir %s is or holds its data dir or a secret file; name a directory beside it",
				text.Clip(text.OneLine(dir), 200))
		}
	}
	return nil
}

// sessionWorkdir applies the workdir rule to an existing session whose
// tasks reach a loop of this node.
func (c Config) sessionWorkdir(s Sessions, handle string) error {
	if handle == "" {
		return nil
	}
	dir, ok := s.Workdir(handle)
	if !ok {
		return nil
	}
	if len(c.Workspaces) == 0 {
		return c.refused("it names no workspace, so no task from another node runs in session %s; its operator names one with --workspace DIR",
			text.Clip(text.OneLine(handle), 64))
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = filepath.Clean(dir)
	}
	return c.checkWorkdir(real, dir)
}

// provider makes a harn session's options this node's provider's.
func (c Config) provider(o *taskwire.HarnOptions) error {
	kind := c.ProviderKind
	if kind == "" {
		kind = "openai"
	}
	switch {
	case o.URL != "":
		return c.refused("a harn session started from another node runs with this node's own provider, never a URL the caller names; drop --provider-url")
	case o.Provider != "" && o.Provider != kind:
		return c.refused("its provider is %s; drop --provider", kind)
	case len(o.MCP) > 0:
		return c.refused("a start from another node never runs a command it sends (--mcp NAME=COMMAND); configure MCP servers on node %s itself", c.Node)
	}
	if len(c.Models) > 0 {
		if o.Model == "" {
			o.Model = c.Models[0]
		} else if !slices.Contains(c.Models, o.Model) {
			return c.refused("model %q is not in its --provider-models (%s)", text.Clip(o.Model, 64), strings.Join(c.Models, ","))
		}
	}
	o.Provider, o.URL, o.Key = kind, c.ProviderURL, ""
	return nil
}

// allowed is the union of the remote profiles' grants.
func (c Config) allowed() []runtime.Grant {
	var out []runtime.Grant
	for _, p := range c.Profiles {
		g, err := runtime.Profile(p)
		if err == nil {
			out = append(out, g...)
		}
	}
	return out
}

func (c Config) profileList() string {
	if len(c.Profiles) == 0 {
		return "none"
	}
	return strings.Join(c.Profiles, ",")
}

// grants admits an action's grants: each within the remote profiles.
// None given: the runtime's default (read-only) when within them, else
// the first remote profile.
func (c Config) grants(a *taskwire.Action) error {
	if len(c.Profiles) == 0 {
		return c.refused("it takes no task from another node (--remote-profiles none)")
	}
	allowed := c.allowed()
	if len(a.Grants) == 0 {
		// named, not left to the target's default: a harn session's own
		// default (confirm) is for its local operator
		def, _ := runtime.Profile(DefaultProfiles)
		if _, ok := Within(def, allowed); ok {
			a.Grants = def
			return nil
		}
		g, _ := runtime.Profile(c.Profiles[0])
		a.Grants = g
		return nil
	}
	if g, ok := Within(a.Grants, allowed); !ok {
		return c.refused("grant %q is beyond its --remote-profiles (%s); give --profile %s, or ask its operator",
			strings.TrimSpace(string(runtime.FormatGrants([]runtime.Grant{g}))), c.profileList(), c.Profiles[0])
	}
	return nil
}

// held gives a later task of a session, when the caller names no grants,
// the grants the session holds (a session's grants hold for every later
// task, from any node), if they are within the remote profiles; a session
// that holds more is refused, naming the profile to narrow the task to.
func (c Config) held(s Sessions, a *taskwire.Action) error {
	if len(a.Grants) > 0 || a.Session == "" || len(c.Profiles) == 0 {
		return nil
	}
	gs, ok := s.SessionGrants(a.Session)
	if !ok {
		return nil
	}
	if g, ok := Within(gs, c.allowed()); !ok {
		return c.refused("session %s holds %q, beyond its --remote-profiles (%s); give --profile %s for a narrower task, or ask its operator",
			text.Clip(a.Session, 64), strings.TrimSpace(string(runtime.FormatGrants([]runtime.Grant{g}))), c.profileList(), c.Profiles[0])
	}
	a.Grants = slices.Clone(gs)
	return nil
}

// taskGrants admits an existing task's grants ("" passes).
func (c Config) taskGrants(s Sessions, task, what string) error {
	if task == "" {
		return nil
	}
	gs, err := s.Grants(task)
	if err != nil {
		return nil // no such task: the action itself says so
	}
	if len(c.Profiles) == 0 {
		return c.refused("it takes no task from another node (--remote-profiles none)")
	}
	if g, ok := Within(gs, c.allowed()); !ok {
		return c.refused("task %s holds %q, beyond its --remote-profiles (%s): another node may not %s it",
			text.Clip(task, 64), strings.TrimSpace(string(runtime.FormatGrants([]runtime.Grant{g}))), c.profileList(), what)
	}
	return nil
}

// Within reports whether every grant of gs is covered by one of allowed;
// when not, the first that is not.
func Within(gs, allowed []runtime.Grant) (runtime.Grant, bool) {
	for _, g := range gs {
		ok := false
		for _, p := range allowed {
			if Covers(p, g) {
				ok = true
				break
			}
		}
		if !ok {
			return g, false
		}
	}
	return runtime.Grant{}, true
}

// Covers reports whether p gives at least what g gives: a level as high,
// no input pattern or the same one, no confirmation or g's too, and a
// capability pattern that takes in g's (a name it matches, or a pattern
// that is p's own or starts with p's prefix when p is PREFIX*). It errs
// on the side of refusing.
func Covers(p, g runtime.Grant) bool {
	if p.Level < g.Level || (p.Match != "" && p.Match != g.Match) || (p.Confirm && !g.Confirm) {
		return false
	}
	if !strings.Contains(g.Capability, "*") {
		return subagent.CapabilityMatch(p.Capability, g.Capability)
	}
	if p.Capability == "*" || p.Capability == g.Capability {
		return true
	}
	prefix, ok := strings.CutSuffix(p.Capability, "*")
	return ok && !strings.Contains(prefix, "*") && strings.HasPrefix(g.Capability, prefix)
}
