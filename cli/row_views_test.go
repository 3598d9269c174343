package cli

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
)

// cliViews are the CLI's views of a row, each with the fields of
// presence.State it leaves out on purpose and why (the rule "a roster
// field reaches every view"; node/api's TestRosterFieldReachesEveryView is
// the rooms' half).
var cliViews = []struct {
	name  string
	omits map[string]string
	view  func(r *rosterRow) string
}{
	{"json", nil, func(r *rosterRow) string {
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		_ = r.writeJSON(w)
		w.Flush()
		return b.String()
	}},
	{"show", map[string]string{
		"EndedAt":              "shown once the session has ended",
		"EndReason":            "shown once the session has ended",
		"SuggestedSessionName": "the name the agent shows is the one shown",
		"SessionNameSeenFor":   "the name the agent shows is the one shown",
		"LifecycleReason":      "the blocker reason is shown while blocked",
		"AgentPIDStart":        "the process start only tells a reused pid apart",
	}, func(r *rosterRow) string {
		var b bytes.Buffer
		_ = detailView{now: now, loc: time.UTC, full: true}.write(&b, r)
		return b.String()
	}},
}

// TestRosterFieldReachesTheCLI: every field of presence.State that is not
// the reducer's bookkeeping changes `agents show` and `--json`, or the
// view lists it as left out with a reason.
func TestRosterFieldReachesTheCLI(t *testing.T) {
	bookkeeping := map[string]bool{"OpenTurn": true, "TaskStateDeclared": true, "PendingRequests": true,
		"OpenCalls": true, "LastTS": true, "LastID": true}
	base := presence.NewState("s-1")
	out := func(st presence.State, view func(*rosterRow) string) string {
		row := api.RowOf(&st)
		row.Reachable = true
		r, err := newRosterRow(row)
		if err != nil {
			t.Fatal(err)
		}
		return view(r)
	}
	typ := reflect.TypeOf(base)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if bookkeeping[f.Name] {
			continue
		}
		st := base
		v := reflect.ValueOf(&st).Elem().Field(i)
		switch {
		case f.Type == reflect.TypeOf(time.Time{}):
			v.Set(reflect.ValueOf(now.Add(-3 * time.Minute)))
		case f.Type.Kind() == reflect.String:
			v.SetString("v-" + f.Name)
		case f.Type.Kind() == reflect.Bool:
			v.SetBool(true)
		case f.Type.Kind() == reflect.Int, f.Type.Kind() == reflect.Uint64:
			if f.Type.Kind() == reflect.Int {
				v.SetInt(4242)
			} else {
				v.SetUint(4242)
			}
		case f.Type.Kind() == reflect.Slice:
			v.Set(reflect.ValueOf([]string{"v-" + f.Name}))
		default:
			t.Fatalf("State.%s: no value for %s", f.Name, f.Type)
		}
		if f.Name == "SilentSince" || f.Name == "LastEvidenceAt" {
			st.Activity = presence.ActivityWorking // silence shows on a working row
			base2 := base
			base2.Activity = presence.ActivityWorking
			for _, cv := range cliViews {
				if _, omitted := cv.omits[f.Name]; !omitted && out(base2, cv.view) == out(st, cv.view) {
					t.Errorf("State.%s does not reach the CLI's %s view", f.Name, cv.name)
				}
			}
			continue
		}
		for _, cv := range cliViews {
			_, omitted := cv.omits[f.Name]
			reaches := out(base, cv.view) != out(st, cv.view)
			switch {
			case !reaches && !omitted:
				t.Errorf("State.%s does not reach the CLI's %s view: show it (cli/detail.go, cli/table.go) or list it in the view's omits with why", f.Name, cv.name)
			case reaches && omitted:
				t.Errorf("State.%s reaches the CLI's %s view but is listed as left out: drop it from omits", f.Name, cv.name)
			}
		}
	}
}
