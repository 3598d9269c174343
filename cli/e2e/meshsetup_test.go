package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hintAfter is the command printed after marker in out: up to the end of
// the line, or between backticks when the marker ends with one.
func hintAfter(t *testing.T, out, marker string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(out, marker)
	if !ok {
		t.Fatalf("no %q in:\n%s", marker, out)
	}
	rest, _, _ = strings.Cut(rest, "\n")
	if strings.HasSuffix(marker, "`") {
		rest, _, _ = strings.Cut(rest, "`")
	}
	words := strings.Fields(rest) // the test's paths and tokens need no quoting
	if len(words) < 2 || words[0] != "harn" {
		t.Fatalf("hint %q is not a harn command", rest)
	}
	return words
}

// placeEnv is env's environment with this node's own ports and bind
// address, as a user's config or environment would give them.
func placeEnv(e *env, ports []int, extra ...string) []string {
	return append(append(e.hookEnv(), "HARN_BIND=127.0.0.1",
		"HARN_GOSSIP_PORT="+strconv.Itoa(ports[0]), "HARN_RAFT_PORT="+strconv.Itoa(ports[1]),
		"HARN_RPC_PORT="+strconv.Itoa(ports[2])), extra...)
}

// TestMeshSetupHintsRunAsPrinted: `harn mesh init --name nodeA` records
// the name and the server role in the config file, and the `harn node` it
// prints, run as printed, starts server nodeA (its certificate's name).
// `harn token create --server` there prints the join command with the
// node's real gossip address and port, --join-rpc and --server; run as
// printed on a second node (its own data dir and free ports), it joins as
// a voter.
func TestMeshSetupHintsRunAsPrinted(t *testing.T) {
	a := newEnv(t)
	pa := freePorts(t, 3)
	envA := placeEnv(a, pa)
	r := run(t, envA, "", "mesh", "init", "--name", "nodeA")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	cfg, err := os.ReadFile(filepath.Join(a.root, "xdg-config", "harn", "config.json"))
	if err != nil || !strings.Contains(string(cfg), `"name": "nodeA"`) || !strings.Contains(string(cfg), `"server": true`) {
		t.Fatalf("the config file after mesh init (%v):\n%s", err, cfg)
	}
	next := hintAfter(t, r.stderr, "start this server with `")
	if strings.Contains(strings.Join(next, " "), "--name") || strings.Contains(strings.Join(next, " "), "--server") {
		t.Errorf("the start hint repeats what the config holds: %q", next)
	}
	na := a.spawn(envA, next[1:]...)
	a.waitReady(na)
	var ra raftJSON
	eventually(t, meshTimeout, "nodeA leads as a voter", func() (bool, string) {
		rr := run(t, envA, "", "mesh", "raft", "--json")
		if rr.code != 0 {
			return false, rr.String()
		}
		mustJSON(t, rr.stdout, &ra)
		return ra.Leader == "nodeA" && strings.Join(ra.voters(), ",") == "nodeA", fmt.Sprintf("%+v", ra)
	})

	tok := run(t, envA, "", "token", "create", "--server")
	if tok.code != 0 {
		t.Fatalf("%v", tok)
	}
	join := hintAfter(t, tok.stderr, "on the other node: ")
	hint := strings.Join(join, " ")
	for _, want := range []string{"--server", "--join 127.0.0.1:" + strconv.Itoa(pa[0]), "--join-rpc 127.0.0.1:" + strconv.Itoa(pa[2]),
		"--join-token " + strings.TrimSpace(tok.stdout)} {
		if !strings.Contains(hint, want) {
			t.Errorf("join hint %q lacks %q", hint, want)
		}
	}
	b := newEnv(t)
	envB := placeEnv(b, freePorts(t, 3), "HARN_NAME=nodeB")
	nb := b.spawn(envB, join[1:]...)
	b.waitReady(nb)
	eventually(t, meshTimeout, "nodeB joins as a voter", func() (bool, string) {
		rr := run(t, envA, "", "mesh", "raft", "--json")
		if rr.code != 0 {
			return false, rr.String()
		}
		var v raftJSON
		mustJSON(t, rr.stdout, &v)
		return strings.Join(v.voters(), ",") == "nodeA,nodeB", fmt.Sprintf("%+v", v)
	})
	a.stopNode(na)
	b.stopNode(nb)
}

// TestMeshInitMakesTheConfigFileThatHarnConfigNames: HARN_CONFIG naming a
// file that does not exist yet (in a folder that does not either) is no
// refusal for `harn mesh init`: it makes the file, 0600 in a 0700 folder,
// with the name and role it used, as for the default path; the `harn node`
// it prints then starts as that server. --config is the same.
func TestMeshInitMakesTheConfigFileThatHarnConfigNames(t *testing.T) {
	a := newEnv(t)
	dir := filepath.Join(a.root, "etc", "harn")
	path := filepath.Join(dir, "harn.conf")
	envA := placeEnv(a, freePorts(t, 3), "HARN_CONFIG="+path)
	r := run(t, envA, "", "mesh", "init", "--name", "nodeA")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "name = nodeA") || !strings.Contains(string(b), "server = true") {
		t.Fatalf("the config file HARN_CONFIG names (%v):\n%s", err, b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the new config file: %v, want mode 0600", fi.Mode())
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the new config folder: %v, want mode 0700", fi.Mode())
	}
	if !strings.Contains(r.stderr, "(recorded in "+path+")") {
		t.Errorf("mesh init does not say where it recorded the name:\n%s", r.stderr)
	}
	// --config naming a new file is the same rule; the hint repeats it.
	other := newEnv(t)
	flagPath := filepath.Join(other.root, "cfg", "harn.json")
	rb := run(t, placeEnv(other, freePorts(t, 3)), "", "mesh", "init", "--name", "nodeB", "--config", flagPath)
	if rb.code != 0 {
		t.Fatalf("%v", rb)
	}
	if cb, err := os.ReadFile(flagPath); err != nil || !strings.Contains(string(cb), `"name": "nodeB"`) {
		t.Errorf("the config file --config names (%v):\n%s", err, cb)
	}
	if h := strings.Join(hintAfter(t, rb.stderr, "start this server with `"), " "); !strings.Contains(h, "--config "+flagPath) {
		t.Errorf("the start hint %q does not name --config %s", h, flagPath)
	}

	next := hintAfter(t, r.stderr, "start this server with `")
	na := a.spawn(envA, next[1:]...)
	a.waitReady(na)
	eventually(t, meshTimeout, "nodeA leads", func() (bool, string) {
		rr := run(t, envA, "", "mesh", "raft", "--json")
		if rr.code != 0 {
			return false, rr.String()
		}
		var v raftJSON
		mustJSON(t, rr.stdout, &v)
		return v.Leader == "nodeA", fmt.Sprintf("%+v", v)
	})
	a.stopNode(na)
}
