package board

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/harn-dev/harn/internal/testsupport"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/clock"
)

// hostileCommand is a command with markup and an escape sequence in it,
// and the part that matters at its end.
const hostileCommand = "echo '<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>' \x1b[8m\n" +
	"git push --force-with-lease origin main"

// factsRows are a harn session whose shell call waits for its
// confirmation (with hostileCommand), and an agent's Edit that waits for
// a permission, with its diff.
func factsRows() []Row {
	m := func(d time.Duration) time.Time { return t0.Add(-d) }
	return []Row{
		{SessionRow: &api.SessionRow{SessionId: "s-harn", Name: "hal", Agent: "harn", Node: "beta", Task: "push the branch", Activity: "needs_input",
			ActivityUpdatedAtUnixNano: ns(m(time.Minute)), TaskState: "active", Reachable: true,
			HarnTask: &api.HarnTask{Id: "t-7", State: "running", PendingCalls: []string{"call-1"}}},
			PendingRequests: []Request{{ID: "call-1", Kind: "confirmation", TaskID: "t-7", Tool: "shell", Agent: "harn",
				Command: hostileCommand, Cwd: "/src/harn", Handle: "hal", Opened: m(90 * time.Second)}}},
		{SessionRow: &api.SessionRow{SessionId: "s-edit", Name: "eda", Agent: "claude-code", Node: "beta", Task: "fix the parser", Activity: "needs_input",
			ActivityUpdatedAtUnixNano: ns(m(time.Minute)), TaskState: "active", Reachable: true},
			PendingRequests: []Request{{ID: "r-2", Kind: "permission", Tool: "Edit", Agent: "claude-code",
				Path: "/src/harn/parse.go", Diff: "--- a/parse.go\n+++ b/parse.go\n@@ (the file's lines are not known) @@\n-old <b>line</b>\n+new line",
				Cwd: "/src/harn", Handle: "eda", Opened: m(30 * time.Second)}}}}
}

// TestCardShowsWhatEachApprovalAsksEscaped: a card shows each waiting
// call's facts (a confirmation's too): the command whole, its cwd, the
// session, the agent and the wait; a write's file and its diff in a
// collapsible block. Markup in them is escaped and escape sequences are
// stripped.
func TestCardShowsWhatEachApprovalAsksEscaped(t *testing.T) {
	s, err := New(Config{Token: secret, Source: newFake(factsRows()...), Actions: &fakeActions{}, Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	body := get(t, s.Handler(), "/").Body.String()
	for _, want := range []string{
		`<span class="req-what">confirm: shell · harn · waiting 1m</span>`,
		`git push --force-with-lease origin main</code></pre>`,
		`&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=window.__pwned=2&gt;`,
		`session hal`, `in <code>/src/harn</code>`,
		`<span class="req-file">file <code>/src/harn/parse.go</code></span>`,
		`<details class="req-diff"><summary>diff · 5 lines</summary><pre><code>`,
		`-old &lt;b&gt;line&lt;/b&gt;`,
		`name="request_kind" value="confirmation"`, `name="task" value="t-7"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the board lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>window", "<img src=x", "\x1b", "<b>line"} {
		if strings.Contains(body, bad) {
			t.Errorf("the board carries %q raw", bad)
		}
	}
	// The call-only confirmation the task lists is the one with facts,
	// not a second, blind one.
	if n := strings.Count(body, `name="request" value="call-1"`); n != 1 {
		t.Errorf("call-1 has %d forms, want 1", n)
	}
}

// TestCardSaysWhenTheCommandWasCut: a command the node cut at its bound
// says so on the card, and the board cuts one that comes longer.
func TestCardSaysWhenTheCommandWasCut(t *testing.T) {
	rows := factsRows()
	rows[0].PendingRequests[0].Command = strings.Repeat("a", maxCommand+10)
	s, err := New(Config{Token: secret, Source: newFake(rows...), Actions: &fakeActions{}, Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	body := get(t, s.Handler(), "/").Body.String()
	if !strings.Contains(body, "the command is longer: its first 4 KiB are shown") || strings.Contains(body, strings.Repeat("a", maxCommand+1)) {
		t.Fatal("a command over the bound is neither cut nor said to be")
	}
	rows[0].PendingRequests[0].Command = strings.Repeat("a", maxCommand)
	s2, _ := New(Config{Token: secret, Source: newFake(rows...), Actions: &fakeActions{}, Clock: clock.NewFake(t0)})
	if body := get(t, s2.Handler(), "/").Body.String(); strings.Contains(body, "the command is longer") || !strings.Contains(body, strings.Repeat("a", maxCommand)) {
		t.Fatal("a command of exactly the bound is shown whole")
	}
}

// TestBrowserShowsTheApprovalsFacts drives the card in headless Chromium:
// the command is shown whole and as text (its markup runs nothing), the
// diff is collapsed until opened, and the dialog names the command before
// anything is sent.
func TestBrowserShowsTheApprovalsFacts(t *testing.T) {
	path := testsupport.Chromium(t)
	dir := testsupport.Artifacts(t)
	acts := &fakeActions{}
	s, err := New(Config{Addr: "127.0.0.1:0", Token: secret, Source: newFake(factsRows()...), Actions: acts, Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The browser starts on bctx itself: one started under a step's
	// shorter context would die with it.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	step(t, bctx, 30*time.Second, chromedp.Navigate(s.URL()), chromedp.WaitVisible(`article[data-id="s-harn"] form.request`))

	card := eval[string](t, bctx, `document.querySelector('article[data-id="s-harn"] form.request').innerText`)
	for _, want := range []string{"confirm: shell · harn · waiting 1m", "<script>window.__pwned=1</script>",
		"git push --force-with-lease origin main", "session hal", "/src/harn"} {
		if !strings.Contains(card, want) {
			t.Fatalf("the card lacks %q: %q", want, card)
		}
	}
	if pwned := eval[bool](t, bctx, `window.__pwned !== undefined || document.querySelector('article img') !== null`); pwned {
		t.Fatal("markup in the command ran or made an element")
	}
	// The diff is collapsed until its summary is clicked.
	if open := eval[bool](t, bctx, `document.querySelector('article[data-id="s-edit"] details.req-diff').open`); open {
		t.Fatal("the diff is open before it is asked for")
	}
	step(t, bctx, 10*time.Second, chromedp.Click(`article[data-id="s-edit"] details.req-diff summary`))
	if d := eval[string](t, bctx, `document.querySelector('article[data-id="s-edit"] details.req-diff').innerText`); !strings.Contains(d, "+new line") ||
		!strings.Contains(d, "-old <b>line</b>") {
		t.Fatalf("the opened diff: %q", d)
	}
	shoot(t, bctx, dir, "board-approval-facts.png")
	step(t, bctx, 10*time.Second,
		focusJS(`article[data-id="s-harn"] button[value="approve"]`),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(`#confirm`))
	if what := eval[string](t, bctx, `document.getElementById('confirm-what').textContent`); !strings.Contains(what, "git push --force-with-lease origin main") ||
		!strings.Contains(what, "confirmation call-1: shell") || !strings.Contains(what, "cwd /src/harn") || !strings.Contains(what, "agent harn") {
		t.Fatalf("the dialog says %q", what)
	}
	if n := len(acts.log()); n != 0 {
		t.Fatalf("approve ran before confirmation: %v", acts.log())
	}
}
