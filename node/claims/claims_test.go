package claims

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

func TestNormalizeURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://github.com/Owner/Repo.git", "github.com/Owner/Repo"},
		{"https://GitHub.com/Owner/Repo/", "github.com/Owner/Repo"},
		{"git@github.com:Owner/Repo.git", "github.com/Owner/Repo"},
		{"github.com:Owner/Repo", "github.com/Owner/Repo"},
		{"ssh://git@GITHUB.com:22/Owner/Repo.git", "github.com/Owner/Repo"},
		{"https://user:secret@github.com/Owner/Repo", "github.com/Owner/Repo"},
		{"git://host.example/a/b.git", "host.example/a/b"},
		{"file:///srv/git/repo.git", "/srv/git/repo"},
		{"/srv/git/repo.git", "/srv/git/repo"},
		{"../up/repo", "../up/repo"},
		{"", ""},
		{"  ", ""},
	} {
		if got := NormalizeURL(tc.in); got != tc.want {
			t.Errorf("NormalizeURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if RepoIdentity("", "/home/me/proj/") != "/home/me/proj" || RepoIdentity("git@h:o/r", "/x") != "h/o/r" {
		t.Error("RepoIdentity")
	}
}

// TestSSHAndHTTPSClonesShareOneIdentity is the rule that makes two clones
// of one repository share claims.
func TestSSHAndHTTPSClonesShareOneIdentity(t *testing.T) {
	if NormalizeURL("git@github.com:harn-dev/harn.git") != NormalizeURL("https://github.com/harn-dev/harn") {
		t.Fatal("ssh and https clones differ")
	}
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"git@h:o/r.git", "https://h/o/r", "ssh://u@h:22/o/r", "::", "@:", "file://", "a:b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id := NormalizeURL(s)
		if again := NormalizeURL(id); again != id {
			t.Fatalf("not stable: %q -> %q -> %q", s, id, again)
		}
	})
}

type fakeDescribe map[string]Holder

func (f fakeDescribe) Describe(s, node string) Holder { h := f[s]; return h }

type writerFunc func(ctx context.Context, cmd raftstore.Command) error

func (f writerFunc) Write(ctx context.Context, cmd raftstore.Command) error { return f(ctx, cmd) }

func newTestDecider(mode Mode, l *Local, d fakeDescribe) *Decider {
	return New(Config{Mode: mode, Node: "n1", Table: l, Writer: l, Describe: d,
		Clock: clock.NewFake(time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC))})
}

func TestFreePathIsClaimedForTheWriter(t *testing.T) {
	l := NewLocal()
	d := newTestDecider(ModeEnforce, l, nil)
	v := d.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"pkg/x.go"}})
	if v.Decision != DecideAllow {
		t.Fatalf("%+v", v)
	}
	if c, ok := l.ClaimOf("R", "pkg/x.go"); !ok || c.SessionID != "a" || c.Node != "n1" {
		t.Fatalf("not claimed: %+v", c)
	}
}

func TestWriteToAPathHeldByAnotherSessionIsDenied(t *testing.T) {
	l := NewLocal()
	d := newTestDecider(ModeEnforce, l, fakeDescribe{"a": {Name: "Fixer", Agent: "claude-code", Task: "refactor x", Node: "A"}})
	d.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"pkg/x.go"}})
	v := d.Decide(context.Background(), Request{Session: "b", Repo: "R", Paths: []string{"pkg/x.go"}})
	if v.Decision != DecideDeny {
		t.Fatalf("%+v", v)
	}
	for _, want := range []string{"pkg/x.go", "Fixer", "claude-code", "node A", `task "refactor x"`, "release-claim --session a", "Wait"} {
		if !strings.Contains(v.Reason, want) {
			t.Errorf("reason lacks %q: %s", want, v.Reason)
		}
	}
	if v := d.Decide(context.Background(), Request{Session: "b", Repo: "R", Paths: []string{"pkg/y.go"}}); v.Decision != DecideAllow {
		t.Fatalf("another path: %+v", v)
	}
}

func TestDenialSaysTheHolderIsUnreachable(t *testing.T) {
	l := NewLocal()
	d := newTestDecider(ModeEnforce, l, fakeDescribe{"a": {Node: "A", Unreachable: true}})
	d.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"x"}})
	v := d.Decide(context.Background(), Request{Session: "b", Repo: "R", Paths: []string{"x"}})
	if v.Decision != DecideDeny || !strings.Contains(v.Reason, "unreachable") || !strings.Contains(v.Reason, "still holds") {
		t.Fatalf("%+v", v)
	}
}

func TestWarnModeTellsButDoesNotStop(t *testing.T) {
	l := NewLocal()
	d := newTestDecider(ModeWarn, l, nil)
	d.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"x"}})
	v := d.Decide(context.Background(), Request{Session: "b", Repo: "R", Paths: []string{"x"}})
	if v.Decision != DecideWarn || !strings.HasPrefix(v.Reason, "harn (warning)") {
		t.Fatalf("%+v", v)
	}
}

func TestAfterTheWriteAConflictOnlyWarns(t *testing.T) {
	l := NewLocal()
	d := newTestDecider(ModeEnforce, l, nil)
	d.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"x"}})
	if v := d.Decide(context.Background(), Request{Session: "b", Repo: "R", Paths: []string{"x"}, Phase: PhasePost}); v.Decision != DecideWarn {
		t.Fatalf("%+v", v)
	}
}

func TestClaimsOffDecidesNothing(t *testing.T) {
	l := NewLocal()
	d := newTestDecider(ModeOff, l, nil)
	if v := d.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"x"}}); v.Decision != DecideNone {
		t.Fatalf("%+v", v)
	}
	if _, ok := l.ClaimOf("R", "x"); ok {
		t.Fatal("claims off still claimed")
	}
}

// TestUnrecordedClaimAllowsWithADiagnostic: a registry that does not
// answer within the budget never stalls the write.
func TestUnrecordedClaimAllowsWithADiagnostic(t *testing.T) {
	l := NewLocal()
	stuck := writerFunc(func(ctx context.Context, _ raftstore.Command) error { <-ctx.Done(); return ctx.Err() })
	d := New(Config{Mode: ModeEnforce, Table: l, Writer: stuck, Describe: fakeDescribe{}, Budget: time.Millisecond})
	defer d.Close()
	v := d.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"x"}})
	if v.Decision != DecideAllow || !strings.Contains(v.Diagnostic, "not recorded") || !errors.Is(context.DeadlineExceeded, context.DeadlineExceeded) {
		t.Fatalf("%+v", v)
	}
}

// TestLostRaceIsDenied: the table was free when read, but another
// session's claim came first in the log.
func TestLostRaceIsDenied(t *testing.T) {
	l := NewLocal()
	racer := writerFunc(func(ctx context.Context, cmd raftstore.Command) error {
		_ = l.Write(ctx, raftstore.ClaimCmd("other", "B", "R", time.Time{}, "x"))
		return l.Write(ctx, cmd)
	})
	d := New(Config{Mode: ModeEnforce, Table: l, Writer: racer, Describe: fakeDescribe{}})
	if v := d.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"x"}}); v.Decision != DecideDeny {
		t.Fatalf("%+v", v)
	}
}

func TestClaimOfAnEndedSessionIsReleasedOnSight(t *testing.T) {
	l := NewLocal()
	d := newTestDecider(ModeEnforce, l, fakeDescribe{"a": {Ended: true}})
	d.Decide(context.Background(), Request{Session: "a", Repo: "R", Paths: []string{"x"}})
	if v := d.Decide(context.Background(), Request{Session: "b", Repo: "R", Paths: []string{"x"}}); v.Decision != DecideAllow {
		t.Fatalf("%+v", v)
	}
	if c, _ := l.ClaimOf("R", "x"); c.SessionID != "b" {
		t.Fatalf("holder %+v", c)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeEnforce, "off": ModeOff, "WARN": ModeWarn, "enforce": ModeEnforce} {
		if m, err := ParseMode(in); err != nil || m != want {
			t.Errorf("%q: %v %v", in, m, err)
		}
	}
	if _, err := ParseMode("maybe"); !errors.Is(err, ErrBadMode) {
		t.Error(err)
	}
}
