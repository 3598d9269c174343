package board

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/harn-dev/harn/internal/testsupport"
	"github.com/harn-dev/harn/util/clock"
)

func step(t *testing.T, ctx context.Context, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

func shoot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", p, len(png))
}

// focusJS focuses an element from the page's script: a live repaint
// between a DOM query and the focus cannot leave a stale node id (the page
// keeps the focus on the same card across repaints).
// closeDialog closes the confirmation dialog with Escape and waits until
// the board has handled its close event (it fires a task later and moves
// the focus back to the action's button), so that the next step's focus
// is not taken by it.
func closeDialog(t *testing.T, ctx context.Context) {
	t.Helper()
	eval[bool](t, ctx, `(window.__closed = false, document.getElementById('confirm').addEventListener('close', () => { window.__closed = true }, {once: true}), true)`)
	step(t, ctx, 10*time.Second, chromedp.KeyEvent("\x1b"),
		chromedp.Poll[chromedp.Void](`window.__closed === true`, chromedp.WithPollingTimeout(5*time.Second)))
}

func focusJS(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelector('` + sel + `').focus()`)
}

// TestBrowser drives the board in headless Chromium: one browser, the
// steps in order (the token first, before the browser holds the cookie).
func TestBrowser(t *testing.T) {
	path := testsupport.Chromium(t)
	dir := testsupport.Artifacts(t)
	src := newFake(seed()...)
	src.traces["s-ended"] = seedTrace()
	acts := &fakeActions{}
	s, err := New(Config{Addr: "127.0.0.1:0", Token: secret, Source: src, Actions: acts, Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "http://" + s.Addr() + "/"

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// Start the browser on bctx itself: a browser started under a shorter
	// context would die with it. ctx bounds the whole test.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}

	t.Run("TokenIsEnforcedInTheBrowser", func(t *testing.T) {
		// The status is read from the network events (a 401 is a load
		// error to chromedp).
		var mu sync.Mutex
		var statuses []int64
		if err := chromedp.Listen(bctx, func(ev any) {
			if e, ok := ev.(*network.EventResponseReceived); ok && e.Type == network.ResourceTypeDocument {
				mu.Lock()
				statuses = append(statuses, e.Response.Status)
				mu.Unlock()
			}
		}); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{base, base + "s/s-ended", base + "?token=wrong"} {
			mu.Lock()
			statuses = nil
			mu.Unlock()
			c, cc := context.WithTimeout(bctx, 20*time.Second)
			err := chromedp.Do(c, chromedp.Navigate(u))
			cc()
			var le *chromedp.LoadError
			if err != nil && !(errors.As(err, &le) && strings.Contains(le.ErrorText, "ERR_HTTP_RESPONSE_CODE_FAILURE")) {
				t.Fatalf("%s: %v", u, err)
			}
			mu.Lock()
			got := append([]int64(nil), statuses...)
			mu.Unlock()
			if len(got) != 1 || got[0] != 401 {
				t.Fatalf("%s: document statuses %v, want [401]", u, got)
			}
			html := eval[string](t, bctx, `(document.documentElement || {}).outerHTML || ""`)
			for _, leak := range []string{"s-need", "migrate the ledger", "data-id", "harn board"} {
				if strings.Contains(html, leak) {
					t.Fatalf("%s: the 401 page shows %q", u, leak)
				}
			}
			if !strings.Contains(html, "harn web open") {
				t.Fatalf("%s: the 401 page does not say to run harn web open: %s", u, html)
			}
		}
	})

	t.Run("BoardShowsTheSeededSessions", func(t *testing.T) {
		c, cc := context.WithTimeout(bctx, 20*time.Second)
		res, err := chromedp.Run(c, chromedp.NavigateResponse(s.URL()))
		cc()
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != 200 {
			t.Fatalf("with the token: status %d", res.Status)
		}
		if p := eval[string](t, bctx, `location.search`); strings.Contains(p, "token") {
			t.Fatalf("the token stays in the address bar: %q", p)
		}
		step(t, bctx, 10*time.Second, chromedp.WaitVisible(`article[data-id="s-need"]`))
		ids := eval[[]string](t, bctx, `[...document.querySelectorAll('article.card')].map(a => a.dataset.id)`)
		if got := strings.Join(ids, " "); got != "s-need s-block s-task s-work s-idle s-gone" {
			t.Fatalf("cards %q", got)
		}
		if title := eval[string](t, bctx, `document.title`); title != "(2) harn board" {
			t.Fatalf("title %q: it counts the sessions that need input or are blocked", title)
		}
		if n := eval[int](t, bctx, `document.querySelectorAll('section.machine.unreachable').length`); n != 1 {
			t.Fatalf("%d unreachable machines dimmed", n)
		}
	})

	t.Run("CardsFillTheWidth", func(t *testing.T) {
		// At 1280 px every machine's row of cards covers its grid's width:
		// no empty fixed-width tracks beside a machine's few cards.
		fill := eval[[]float64](t, bctx, `[...document.querySelectorAll('.cards')].map(g => {
			const cs = [...g.children].filter(c => c.offsetTop === g.children[0].offsetTop);
			const w = cs.reduce((a, c) => a + c.getBoundingClientRect().width, 0);
			return w / g.getBoundingClientRect().width; })`)
		if len(fill) == 0 {
			t.Fatal("no card grids")
		}
		for i, f := range fill {
			if f < 0.9 {
				t.Errorf("machine %d: its first row of cards covers %.0f%% of the width", i, 100*f)
			}
		}
	})

	t.Run("Screenshots", func(t *testing.T) {
		shoot(t, bctx, dir, "board-desktop.png")
		step(t, bctx, 10*time.Second, chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile))
		if w := eval[int](t, bctx, `document.documentElement.scrollWidth`); w > 375 {
			t.Errorf("the board overflows a phone: %dpx wide", w)
		}
		shoot(t, bctx, dir, "board-phone.png")
		dark := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}
		step(t, bctx, 10*time.Second, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, dark)
			return err
		}))
		if bg := eval[string](t, bctx, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(15, 18, 22)" {
			t.Errorf("dark mode background %q", bg)
		}
		shoot(t, bctx, dir, "board-phone-dark.png")
		step(t, bctx, 10*time.Second, chromedp.EmulateViewport(1280, 900))
	})

	t.Run("LifecycleChangeRepaintsWithoutReload", func(t *testing.T) {
		step(t, bctx, 10*time.Second, chromedp.Poll[chromedp.Void](`document.getElementById('live').dataset.state === 'live'`,
			chromedp.WithPollingTimeout(10*time.Second)))
		eval[bool](t, bctx, `window.__sameDocument = true`)
		r := src.row("s-work")
		r.TaskState, r.BlockerReason, r.TaskStateUpdatedAtUnixNano = "blocked", "waiting for review", ns(t0)
		start := time.Now()
		src.update(r)
		step(t, bctx, 5*time.Second, chromedp.Poll[chromedp.Void](
			`document.querySelector('article[data-id="s-work"]').classList.contains('lc-blocked')`,
			chromedp.WithPollingTimeout(2*time.Second), chromedp.WithPollingMutation()))
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("repainted after %v", d)
		}
		if !eval[bool](t, bctx, `window.__sameDocument === true`) {
			t.Fatal("the page reloaded")
		}
		txt := eval[string](t, bctx, `document.querySelector('article[data-id="s-work"]').innerText`)
		if !strings.Contains(txt, "blocked: waiting for review") {
			t.Fatalf("card text %q", txt)
		}
		// The summary above the cards repainted with them.
		if sum := eval[string](t, bctx, `document.querySelector('.summary').innerText`); !strings.Contains(sum, "2 blocked") {
			t.Fatalf("summary %q", sum)
		}
	})

	t.Run("StreamDropShowsReconnectingThenRecovers", func(t *testing.T) {
		eval[bool](t, bctx, `(() => { window.__states = [];
			const l = document.getElementById('live');
			new MutationObserver(() => window.__states.push(l.dataset.state)).observe(l, {attributes: true, childList: true});
			return true; })()`)
		src.kick()
		step(t, bctx, 15*time.Second, chromedp.Poll[chromedp.Void](
			`window.__states.includes('reconnecting') && document.getElementById('live').dataset.state === 'live'`,
			chromedp.WithPollingTimeout(10*time.Second)))
		if txt := eval[string](t, bctx, `document.getElementById('live').textContent`); txt != "live" {
			t.Fatalf("status %q", txt)
		}
		// The new stream carries changes.
		r := src.row("s-idle")
		r.Activity, r.ActivityUpdatedAtUnixNano = "needs_input", ns(t0)
		src.update(r)
		step(t, bctx, 5*time.Second, chromedp.Poll[chromedp.Void](
			`document.querySelector('article[data-id="s-idle"]').dataset.activity === 'needs_input'`,
			chromedp.WithPollingTimeout(2*time.Second), chromedp.WithPollingMutation()))
	})

	t.Run("ApproveAsksConfirmationAndShowsTheResult", func(t *testing.T) {
		// The card shows the command in full, where and how long it has
		// waited; the dialog names it again before anything is sent.
		card := eval[string](t, bctx, `document.querySelector('article[data-id="s-need"] form.request').innerText`)
		for _, want := range []string{"permission: Bash", "rm -rf build && make release VERSION=<1.2>", "nell", "harn@main", "/src/harn", "waiting 2m"} {
			if !strings.Contains(card, want) {
				t.Fatalf("the card's request lacks %q: %q", want, card)
			}
		}
		step(t, bctx, 10*time.Second,
			focusJS(`article[data-id="s-need"] button[value="approve"]`),
			chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(`#confirm`))
		if what := eval[string](t, bctx, `document.getElementById('confirm-what').textContent`); !strings.Contains(what, "Bash rm -rf build && make release VERSION=<1.2>") ||
			!strings.Contains(what, "cwd /src/harn") || !strings.Contains(what, "session nell · harn@main") {
			t.Fatalf("the dialog says %q", what)
		}
		if n := len(acts.log()); n != 0 {
			t.Fatalf("approve ran before confirmation: %v", acts.log())
		}
		if f := eval[string](t, bctx, `document.activeElement.id`); f != "confirm-ok" {
			t.Fatalf("focus in the dialog on %q", f)
		}
		step(t, bctx, 10*time.Second, chromedp.KeyEvent("\r"),
			chromedp.Poll[chromedp.Void](`document.getElementById('confirm-result').textContent.includes('approve sent to s-need')`,
				chromedp.WithPollingTimeout(5*time.Second)))
		if got := acts.log(); len(got) != 1 || got[0] != "approve s-need  req-1 " {
			t.Fatalf("calls %v", got)
		}
		closeDialog(t, bctx)
	})

	// The dialog's close event comes a task after close(): an action
	// opened before it fires keeps its own pending action, and its OK
	// sends it.
	t.Run("AnActionOpenedRightAfterACloseSendsItself", func(t *testing.T) {
		before := len(acts.log())
		eval[bool](t, bctx, `(() => {
			const dlg = document.getElementById('confirm');
			document.querySelector('article[data-id="s-need"] button[value="approve"]').click();
			dlg.close();
			document.querySelector('article[data-id="s-need"] button[value="deny"]').click();
			return dlg.open;
		})()`)
		// Let the first close event fire, then confirm.
		step(t, bctx, 10*time.Second, chromedp.Poll[chromedp.Void](`new Promise(r => setTimeout(() => r(true), 50))`,
			chromedp.WithPollingTimeout(5*time.Second)))
		eval[bool](t, bctx, `document.getElementById('confirm-ok').click(), true`)
		step(t, bctx, 10*time.Second, chromedp.Poll[chromedp.Void](`document.getElementById('confirm-result').textContent.includes('deny sent to s-need')`,
			chromedp.WithPollingTimeout(5*time.Second)))
		if got := acts.log(); len(got) != before+1 || !strings.HasPrefix(got[len(got)-1], "deny s-need") {
			t.Fatalf("calls %v", got)
		}
		closeDialog(t, bctx)
	})

	t.Run("KeyboardOpensTheDetailOfACard", func(t *testing.T) {
		step(t, bctx, 10*time.Second, focusJS(`article[data-id="s-block"]`), chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(`.detail h1`))
		if p := eval[string](t, bctx, `location.pathname`); p != "/s/s-block" {
			t.Fatalf("Enter on a card opened %q", p)
		}
	})

	t.Run("DetailOfAnEndedSessionLoads", func(t *testing.T) {
		c, cc := context.WithTimeout(bctx, 20*time.Second)
		res, err := chromedp.Run(c, chromedp.NavigateResponse(base+"s/s-ended"))
		cc()
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != 200 {
			t.Fatalf("status %d", res.Status)
		}
		h1 := eval[string](t, bctx, `document.querySelector('h1').innerText`)
		if !strings.Contains(h1, "eve") || !strings.Contains(h1, "ended") {
			t.Fatalf("h1 %q", h1)
		}
		types := eval[[]string](t, bctx, `[...document.querySelectorAll('table.trace td.etype')].map(td => td.textContent)`)
		if strings.Join(types, " ") != "session.end state.task_state session.start" {
			t.Fatalf("trace %v", types)
		}
		shoot(t, bctx, dir, "detail-ended.png")
	})
}
