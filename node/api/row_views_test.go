package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/board"
	"github.com/harn-dev/harn/node/gossip"
	"github.com/harn-dev/harn/node/notify"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/clock"
)

// bookkeeping are the reducer's fields: they persist in the heartbeat and
// never reach a reader's view.
var bookkeeping = map[string]bool{"OpenTurn": true, "TaskStateDeclared": true, "PendingRequests": true,
	"OpenCalls": true, "LastTS": true, "LastID": true}

// views are the roster's views in the node's rooms, each with the fields
// of presence.State it leaves out on purpose and why. A field of State
// that changes none of a view's output, and is not listed here, fails
// TestRosterFieldReachesEveryView: a new field is added to the row and
// its views, or listed here with its reason.
var views = []struct {
	name  string
	omits map[string]string
	view  func(st *presence.State) any
}{
	{"row", nil, func(st *presence.State) any { return api.RowOf(st).State() }},
	{"json", nil, func(st *presence.State) any {
		b, err := api.MarshalRowJSON(api.RowOf(st))
		if err != nil {
			panic(err)
		}
		r, err := api.UnmarshalRowJSON(b)
		if err != nil {
			panic(err)
		}
		return r.State()
	}},
	{"gossip", map[string]string{
		"SilentSince":  "each reader works out silence with its own threshold",
		"WaitingChild": "each reader surfaces children from its own roster",
		"Node":         "the sender's name, from the frame's origin, never the row's",
	}, func(st *presence.State) any {
		b, err := gossip.EncodeDelta(gossip.EntryOf(st, "h"))
		if err != nil {
			panic(err)
		}
		e, err := gossip.DecodeDelta(b)
		if err != nil {
			panic(err)
		}
		return e.State("n")
	}},
	{"board", map[string]string{
		"AgentPIDStart":      "the process start only tells a reused pid apart",
		"AgentPID":           "a pid means nothing on another machine's page",
		"PendingClaims":      "the page shows the claims held",
		"SessionNameSeenFor": "the shown name is enough",
		"EndedAt":            "shown for an ended session; the baseline is live",
		"EndReason":          "shown for an ended session; the baseline is live",
	}, boardPages},
	{"notify", map[string]string{
		"ParentSessionID":   "a message names the session, not its tree",
		"ActivityUpdatedAt": "the engine times a state itself", "ActivitySource": "not a state worth telling",
		"LastEvidenceAt": "silence is the node's to find", "WaitingChild": "a message names the session itself",
		"TaskStateUpdatedAt": "the engine times a state itself",
		"LifecycleReason":    "the blocker reason is told", "Claims": "not a state worth telling",
		"PendingClaims": "not a state worth telling", "SuggestedSessionName": "not a state worth telling",
		"SessionNameSeenFor": "not a state worth telling", "StartedAt": "not a state worth telling",
		"LastEventAt": "not a state worth telling", "Ended": "an ended session is not told about",
		"EndedAt": "an ended session is not told about", "EndReason": "an ended session is not told about",
		"AgentPID": "not a state worth telling", "AgentPIDStart": "not a state worth telling",
		"Cwd": "not a state worth telling", "Repo": "not a state worth telling", "Branch": "not a state worth telling",
		"Events": "not a state worth telling",
	}, func(st *presence.State) any {
		// What a message carries of the session (the engine holds the row).
		return notify.NewPayload(notify.Transition{Kind: notify.KindNeedsInput, Session: notify.SessionOf(api.RowOf(st))}).Session
	}},
}

// boardPages is what the board shows of the state's row: its card on the
// board and its session page, as the pages render them.
func boardPages(st *presence.State) any {
	src.row = board.RowOf(api.RowOf(st))
	var out []string
	for _, target := range []string{"/", "/s/" + st.SessionID} {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Host = "127.0.0.1:7713"
		req.Header.Set("Authorization", "Bearer "+boardToken)
		w := httptest.NewRecorder()
		boardServer.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			panic(fmt.Sprintf("board %s: %d %s", target, w.Code, w.Body))
		}
		out = append(out, w.Body.String())
	}
	return out
}

const boardToken = "row-views-token"

// src and boardServer are one board over one row, rendered once per view
// (one server: the page's CSRF token stays the same).
var (
	src         = &oneRow{}
	boardServer = func() *board.Server {
		s, err := board.New(board.Config{Token: boardToken, Source: src,
			Clock: clock.NewFake(time.Date(2026, 8, 12, 11, 0, 0, 0, time.UTC))})
		if err != nil {
			panic(err)
		}
		return s
	}()
)

// oneRow is a board source of one row.
type oneRow struct{ row board.Row }

func (o *oneRow) Roster(context.Context) ([]board.Row, error)             { return []board.Row{o.row}, nil }
func (o *oneRow) Session(context.Context, string) (board.Row, error)      { return o.row, nil }
func (o *oneRow) Trace(context.Context, string) ([]presence.Event, error) { return nil, nil }
func (o *oneRow) Changes() (<-chan struct{}, func())                      { return make(chan struct{}), func() {} }

// distinct sets field f of st to a value no baseline has.
func distinct(t *testing.T, st *presence.State, f reflect.StructField) {
	t.Helper()
	v := reflect.ValueOf(st).Elem().FieldByIndex(f.Index)
	switch {
	case f.Type == reflect.TypeOf(presence.Activity("")): // a value the views know (the baseline's is unknown)
		v.SetString(string(presence.ActivityWorking))
	case f.Type == reflect.TypeOf(presence.TaskState("")): // (the baseline's is active)
		v.SetString(string(presence.TaskBlocked))
	case f.Type == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Date(2026, 8, 12, 10, 3, 4, 5e6, time.UTC)))
	case f.Type.Kind() == reflect.String:
		v.SetString("v-" + f.Name)
	case f.Type.Kind() == reflect.Bool:
		v.SetBool(true)
	case f.Type.Kind() == reflect.Int:
		v.SetInt(4242)
	case f.Type.Kind() == reflect.Uint64:
		v.SetUint(4242)
	case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String:
		v.Set(reflect.ValueOf([]string{"v-" + f.Name}))
	default:
		t.Fatalf("State.%s: this test sets no %s yet; teach distinct the kind", f.Name, f.Type)
	}
}

// TestRosterFieldReachesEveryView is the rule "a roster field reaches
// every view": every field of presence.State that is not the reducer's
// bookkeeping changes what each view shows, or the view lists it as left
// out with a reason. The CLI's views have their own half of this test
// (cli: TestRosterFieldReachesTheCLI).
func TestRosterFieldReachesEveryView(t *testing.T) {
	base := presence.NewState("s-1")
	typ := reflect.TypeOf(base)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if bookkeeping[f.Name] {
			continue
		}
		st := base
		distinct(t, &st, f)
		for _, v := range views {
			_, omitted := v.omits[f.Name]
			reaches := !reflect.DeepEqual(v.view(&base), v.view(&st))
			switch {
			case !reaches && !omitted:
				t.Errorf("State.%s does not reach the %s view: add it to the row (node/api/harn.proto, row.go) and the view, or list it in the view's omits with why", f.Name, v.name)
			case reaches && omitted:
				t.Errorf("State.%s reaches the %s view but is listed as left out: drop it from omits", f.Name, v.name)
			}
		}
	}
	// A derived field the state computes reaches the views through the
	// fields it derives from (SessionName, Project): a check that they
	// do.
	st := base
	st.Name, st.Repo = "Flint", "shop"
	r := api.RowOf(&st)
	if r.SessionName != st.SessionName() || r.Project != "shop" {
		t.Fatalf("derived fields: %s", fmt.Sprint(r))
	}
}
