package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/cli/daemon"
	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/cli/install"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/util/text"
)

// Check outcomes.
const (
	checkOK      = "ok"
	checkFinding = "finding"
	checkSkip    = "skip"
)

// check is one line of the doctor's report; a finding carries its fix.
type check struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

type doctorReport struct {
	Checks      []check           `json:"checks"`
	Findings    int               `json:"findings"`
	Diagnostics []wire.Diagnostic `json:"diagnostics"`
	// Node is the running node's own account of its setup.
	Node    *nodeReport `json:"node,omitempty"`
	diagErr error       // the node did not list its diagnostics
}

// doctorEnv is what the checks read, gathered once so that tests can
// give their own.
type doctorEnv struct {
	home, wd string
	getenv   func(string) string
	lookPath func(string) (string, error)
	p        hook.Place
	now      time.Time

	noMesh   bool
	bind     string
	mesh     bool // --join or --server: the listeners face the network
	ports    []portSpec
	cfgPath  string
	cfgGiven bool // --config or HARN_CONFIG named it
	key      string
	keyFile  string
}

// diagWindow is how recent a hook diagnostic must be to count as a
// finding: an hour, so that a bad payload fixed this morning is history
// (and `harn node errors --clear` clears them all).
const diagWindow = time.Hour

func newDoctorCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "doctor",
		Short: "check this machine's harn setup: hooks, the agents' trust in them, the node, ports, config and key",
		Long: `Checks that each agent's hooks are installed and run an existing harn, that
an agent that runs only the hooks it trusts trusts them, that the node
answers, that the node's ports are free or its own, that a config file
holding a secret is private, and the gossip key's form; it also lists
recent hook diagnostics. Each finding is one line with its fix. It changes nothing. Exit 0 when all is well, 10 when there
are findings. The mesh flags (ports, bind, join, key) are read like
` + "`harn node`" + ` reads them: flag, HARN_ variable, config file.`,
		Args: hook.NoArgs,
	}
	// A broken config file or HARN_ variable is a finding, not a reason
	// to stop checking.
	var settingsErr error
	c.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		settingsErr = hook.ApplySettings(cmd)
		return nil
	}
	c.RunE = func(cmd *cobra.Command, args []string) error { return runDoctor(cmd, settingsErr) }
	c.Flags().String("config", "", "config file the node reads (default: HARN_CONFIG or $XDG_CONFIG_HOME/harn/config.json)")
	daemon.AddMeshFlags(c)
	hook.AddSecretFileFlags(c)
	hook.AddJSONFlag(c)
	return c
}

func runDoctor(c *cobra.Command, settingsErr error) error {
	e, err := doctorEnvOf(c)
	if err != nil {
		return err
	}
	rep := doctor(c.Context(), e)
	if settingsErr != nil {
		rep.Checks = append([]check{{"settings", checkFinding, text.FirstLine(settingsErr.Error()), "fix or unset it; the checks below used the rest"}}, rep.Checks...)
		rep.Findings++
	}
	if hook.AsJSON(c) {
		if err := hook.WriteJSON(c, rep); err != nil {
			return err
		}
	} else {
		printDoctor(c, e, rep)
	}
	if rep.Findings > 0 {
		return &hook.SilentError{Code: hook.ExitFindings}
	}
	return nil
}

func doctorEnvOf(c *cobra.Command) (doctorEnv, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return doctorEnv{}, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return doctorEnv{}, err
	}
	f := c.Flags()
	e := doctorEnv{home: home, wd: wd, getenv: os.Getenv, lookPath: exec.LookPath, p: hook.PlaceOf(c), now: hook.Clk.Now()}
	e.noMesh, _ = f.GetBool("no-mesh")
	e.bind, _ = f.GetString("bind")
	join, _ := f.GetStringSlice("join")
	server, _ := f.GetBool("server")
	e.mesh = len(join) > 0 || server
	for _, ps := range []portSpec{{"gossip", "gossip-port", 0, true}, {"raft", "raft-port", 0, false},
		{"rpc", "rpc-port", 0, false}, {"http", "http-port", 0, false}} {
		ps.port, _ = f.GetInt(ps.flag)
		if hp, err := f.GetString(ps.flag); err == nil { // --http-port is host:port
			_, ps.port, _ = layout.ParseHTTPAddr(hp)
		}
		e.ports = append(e.ports, ps)
	}
	e.key, _ = f.GetString("gossip-key")
	if f.Lookup("gossip-key-file") != nil {
		e.keyFile, _ = f.GetString("gossip-key-file")
	}
	e.cfgPath, e.cfgGiven = configPathOf(c)
	return e, nil
}

// configPathOf is the config file the node would read, as loadConfigFile
// finds it, and whether it was named explicitly.
func configPathOf(c *cobra.Command) (string, bool) {
	if f := c.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		return f.Value.String(), true
	}
	if v := os.Getenv("HARN_CONFIG"); v != "" {
		return v, true
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "harn", "config.json"), false
	}
	return "", false
}

// doctor runs every check.
func doctor(ctx context.Context, e doctorEnv) doctorReport {
	var rep doctorReport
	add := func(cs ...check) { rep.Checks = append(rep.Checks, cs...) }
	add(checkHooks(e)...)
	add(checkInstructions(e)...)
	add(checkHookTrust(e)...)
	nodeCheck, st, cl := checkNode(ctx, e)
	add(nodeCheck)
	var dr *api.DoctorResponse
	if cl != nil {
		defer cl.Close()
		dr = askDoctor(ctx, cl)
	}
	if dr != nil {
		// The running node says what it uses; this command's flags and
		// defaults may not be what it was started with.
		rep.Node = nodeReportOf(dr)
		add(checkRunningNode(e.now, dr)...)
		add(checkConfigFile(e))
		add(checkGossipKeyFile(e)...)
	} else {
		add(checkPorts(e, st)...)
		add(checkConfigFile(e))
		add(checkGossipKey(e)...)
	}
	if cl != nil {
		rep.Diagnostics, rep.diagErr = nodeDiagnostics(ctx, cl)
		add(checkDiagnostics(e.now, rep.Diagnostics, rep.diagErr))
	}
	for _, c := range rep.Checks {
		if c.Status == checkFinding {
			rep.Findings++
		}
	}
	if rep.Diagnostics == nil {
		rep.Diagnostics = []wire.Diagnostic{}
	}
	return rep
}

func printDoctor(c *cobra.Command, e doctorEnv, rep doctorReport) {
	w := c.OutOrStdout()
	for _, ch := range rep.Checks {
		label := map[string]string{checkOK: "ok     ", checkFinding: "FINDING", checkSkip: "-      "}[ch.Status]
		line := fmt.Sprintf("%s %s: %s", label, ch.Check, text.OneLine(ch.Detail))
		if ch.Fix != "" {
			line += "; fix: " + text.OneLine(ch.Fix)
		}
		fmt.Fprintln(w, line)
	}
	if n := len(rep.Diagnostics); n > 0 {
		fmt.Fprintf(w, "\nrecent hook diagnostics (newest first; all of them: harn node errors):\n")
		for _, d := range rep.Diagnostics[:min(n, 5)] {
			when := d.TS
			if t, err := time.Parse(time.RFC3339Nano, d.TS); err == nil {
				when = text.Ago(e.now, t)
			}
			fmt.Fprintf(w, "  %s  %s: %s\n", when, text.OneLine(d.Source), text.Clip(text.OneLine(d.Error), 160))
		}
	}
	switch rep.Findings {
	case 0:
		fmt.Fprintln(w, "\nall is well")
	case 1:
		fmt.Fprintln(w, "\n1 finding")
	default:
		fmt.Fprintf(w, "\n%d findings\n", rep.Findings)
	}
}

// checkHooks checks each agent's user settings, and the current project's
// when it holds harn's hooks.
func checkHooks(e doctorEnv) []check {
	var out []check
	for _, agent := range install.Agents() {
		for _, scope := range []string{install.ScopeUser, install.ScopeProject} {
			o := install.Options{Agent: agent, Scope: scope, Home: e.home, ProjectDir: e.wd, Getenv: e.getenv}
			name := "hooks " + agent
			fix := "harn hook install " + agent
			if scope == install.ScopeProject {
				name += " (project)"
				fix += " --scope project"
			}
			st, err := install.Inspect(o)
			if scope == install.ScopeProject && (err != nil || len(st.Hooks) == 0) {
				continue // a project without harn's hooks is not a finding
			}
			switch {
			case err != nil:
				out = append(out, check{name, checkFinding, err.Error(), "fix the file or move it aside, then " + fix})
			case !st.FileExists && !st.DirExists:
				out = append(out, check{name, checkSkip, fmt.Sprintf("%s is not set up here (no %s)", agent, filepath.Dir(st.Path)), ""})
			case len(st.Hooks) == 0:
				out = append(out, check{name, checkFinding, "not installed in " + st.Path, fix})
			case len(st.Missing) > 0:
				out = append(out, check{name, checkFinding, fmt.Sprintf("%s lacks harn's hook for %s", st.Path, strings.Join(st.Missing, ", ")), fix})
			default:
				out = append(out, hookBinaryChecks(e, name, fix, st)...)
				out = append(out, hookTimeoutChecks(name, fix, st)...)
			}
		}
	}
	return out
}

// hookBinaryChecks checks that every command of st runs an existing harn.
func hookBinaryChecks(e doctorEnv, name, fix string, st install.Status) []check {
	var bins []string
	for _, h := range st.Hooks {
		if b := install.CommandBinary(h.Command); !slices.Contains(bins, b) {
			bins = append(bins, b)
		}
	}
	var out []check
	for _, b := range bins {
		path := b
		if !filepath.IsAbs(b) {
			p, err := e.lookPath(b)
			if err != nil {
				out = append(out, check{name, checkFinding, fmt.Sprintf("%s runs %q, which is not on PATH", st.Path, b), fix + " (writes this binary's path)"})
				continue
			}
			path = p
		}
		if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			out = append(out, check{name, checkFinding, fmt.Sprintf("%s runs %s, which is not an executable file", st.Path, path), fix + " (writes this binary's path)"})
		}
	}
	if len(out) == 0 {
		out = append(out, check{name, checkOK, fmt.Sprintf("installed in %s for %d events, runs %s", st.Path, len(st.Hooks), strings.Join(bins, ", ")), ""})
	}
	return out
}

// hookTimeoutChecks flags each entry whose timeout does not exceed the
// wait of its command: the agent would kill the hook while it waits for a
// remote approval or a confirmation, and its answer would be lost.
func hookTimeoutChecks(name, fix string, st install.Status) []check {
	var out []check
	for _, h := range st.Hooks {
		if !h.TooShort() {
			continue
		}
		flags := ""
		if i := strings.Index(h.Command, " hook "); i >= 0 {
			if _, rest, ok := strings.Cut(h.Command[i+len(" hook "):], " "); ok {
				flags = " " + rest
			}
		}
		out = append(out, check{name, checkFinding,
			fmt.Sprintf("%s: the %s hook's timeout %s does not exceed its wait %s; the agent kills the hook before the answer comes", st.Path, h.Event, h.Timeout, h.Wait),
			fmt.Sprintf("%s%s (writes a timeout of %s)", fix, flags, h.WantTimeout())})
	}
	return out
}

// checkNode asks the node for its status; it returns the status and an
// open client when the node answers.
func checkNode(ctx context.Context, e doctorEnv) (check, *api.StatusResponse, *client) {
	fix := "start one with `" + hook.StartHint(e.p) + "` (a hook starts one too)"
	if hook.SocketDead(e.p.Socket) {
		return check{"node", checkFinding, "no node answers on " + e.p.Socket, fix}, nil, nil
	}
	cl, err := dial(e.p)
	if err != nil {
		return check{"node", checkFinding, "cannot reach the node on " + e.p.Socket + ": " + err.Error(), fix}, nil, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := cl.api.Status(cctx, &api.StatusRequest{})
	if err != nil {
		cl.Close()
		return check{"node", checkFinding, "the node on " + e.p.Socket + " does not answer: " + err.Error(),
			"see " + filepath.Join(e.p.DataDir, "node.log") + "; restart it"}, nil, nil
	}
	return check{"node", checkOK, fmt.Sprintf("%s (pid %d, %s) answers on %s", st.Node, st.Pid, st.Version, e.p.Socket), ""}, st, cl
}

func nodeDiagnostics(ctx context.Context, cl *client) ([]wire.Diagnostic, error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	res, err := cl.api.Errors(cctx, &api.ErrorsRequest{Limit: 20})
	if err != nil {
		return nil, err
	}
	ds := make([]wire.Diagnostic, 0, len(res.Diagnostics))
	for _, d := range res.Diagnostics {
		ds = append(ds, wire.DiagnosticFromAPI(d))
	}
	return ds, nil
}

// checkDiagnostics makes the hook diagnostics of the last diagWindow one
// finding; older ones are history.
func checkDiagnostics(now time.Time, ds []wire.Diagnostic, err error) check {
	if err != nil {
		return check{"hook diagnostics", checkFinding, "the node did not list them: " + err.Error(), "run `harn node errors`"}
	}
	recent := 0
	for _, d := range ds {
		if t, err := time.Parse(time.RFC3339Nano, d.TS); err == nil && now.Sub(t) < diagWindow {
			recent++
		}
	}
	if recent == 0 {
		return check{"hook diagnostics", checkOK, fmt.Sprintf("none in the last hour (%d older)", len(ds)), ""}
	}
	newest := ds[0]
	return check{"hook diagnostics", checkFinding,
		fmt.Sprintf("%d in the last hour; newest from %s: %s", recent, newest.Source, text.Clip(text.OneLine(newest.Error), 120)),
		"see `harn node errors`; reinstall the agent's hooks with `harn hook install AGENT` if they pass bad flags or names; then `harn node errors --clear`"}
}

// checkConfigFile: a config file holding a secret must not be readable by
// group or others.
func checkConfigFile(e doctorEnv) check {
	if e.cfgPath == "" {
		return check{"config", checkSkip, "no config folder on this system", ""}
	}
	fi, err := os.Stat(e.cfgPath)
	if errors.Is(err, fs.ErrNotExist) && !e.cfgGiven {
		return check{"config", checkOK, "no config file (" + e.cfgPath + "); flags and HARN_ variables only", ""}
	}
	if err != nil {
		return check{"config", checkFinding, err.Error(), "create the file or unset HARN_CONFIG / --config"}
	}
	b, err := hook.ReadSmall(e.cfgPath)
	if err != nil {
		return check{"config", checkFinding, err.Error(), "make it readable by you: chmod 600 " + e.cfgPath}
	}
	vals, err := hook.ParseConfig(b)
	if err != nil {
		return check{"config", checkFinding, fmt.Sprintf("%s: %v", e.cfgPath, err), "fix the file: a JSON object or key = value lines"}
	}
	var secrets []string
	for k := range vals {
		if hook.IsSecretKey(k) {
			secrets = append(secrets, k)
		}
	}
	slices.Sort(secrets)
	mode := fi.Mode().Perm()
	if len(secrets) > 0 && mode&0o077 != 0 {
		return check{"config", checkFinding,
			fmt.Sprintf("%s holds %s and is readable by group or others (mode %04o)", e.cfgPath, strings.Join(secrets, ", "), mode),
			"chmod 600 " + e.cfgPath}
	}
	return check{"config", checkOK, fmt.Sprintf("%s, mode %04o", e.cfgPath, mode), ""}
}

// checkGossipKey checks the gossip key's form (and its file's mode).
// checkGossipKeyFile checks only the mode of --gossip-key-file: with a
// running node, whether gossip is encrypted is the node's to say.
func checkGossipKeyFile(e doctorEnv) []check {
	if e.keyFile == "" {
		return nil
	}
	out, _ := keyFileMode(e, "gossip key file")
	return out
}

// keyFileMode checks that --gossip-key-file exists and is private, under
// the check name; stop is true when the file cannot be read at all.
func keyFileMode(e doctorEnv, name string) (out []check, stop bool) {
	fi, err := os.Stat(e.keyFile)
	if err != nil {
		return []check{{name, checkFinding, err.Error(), "write one with `harn keygen > " + e.keyFile + "`, then chmod 600 " + e.keyFile}}, true
	}
	if fi.Mode().Perm()&0o077 != 0 {
		out = append(out, check{name, checkFinding,
			fmt.Sprintf("%s is readable by group or others (mode %04o)", e.keyFile, fi.Mode().Perm()), "chmod 600 " + e.keyFile})
	}
	return out, false
}

func checkGossipKey(e doctorEnv) []check {
	key, src := e.key, "--gossip-key"
	var out []check
	if e.keyFile != "" {
		src = e.keyFile
		var stop bool
		if out, stop = keyFileMode(e, "gossip key"); stop {
			return out
		}
		b, err := hook.ReadSmall(e.keyFile)
		if err != nil {
			return append(out, check{"gossip key", checkFinding, err.Error(), "chmod 600 " + e.keyFile + " and make it yours"})
		}
		key = strings.TrimSpace(string(b))
	}
	switch {
	case key == "" && e.mesh:
		return append(out, check{"gossip key", checkFinding, "none: this node's gossip with other machines is not encrypted",
			"make one with `harn keygen` and give every node the same one (gossip-key in a config file of mode 0600)"})
	case key == "":
		return append(out, check{"gossip key", checkOK, "none (a lone node gossips with no one)", ""})
	}
	if _, err := layout.DecodeGossipKey(key); err != nil {
		return append(out, check{"gossip key", checkFinding, fmt.Sprintf("%s: %v", src, err), "make one with `harn keygen`"})
	}
	return append(out, check{"gossip key", checkOK, "a 32-byte base64 key (" + src + ")", ""})
}
