package claudecode_test

import (
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter/claudecode"
	at "github.com/harn-dev/harn/presence/adapter/internal/adaptertest"
)

// foldPayloads decodes each payload (one second apart) and folds them.
func foldPayloads(t *testing.T, payloads ...string) presence.State {
	t.Helper()
	var evs []presence.Event
	for i, p := range payloads {
		in := at.Input(p)
		in.Now = in.Now.Add(time.Duration(i) * time.Second)
		res, err := claudecode.New().Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		for j := range res.Events {
			e := res.Events[j]
			e.ID = string(rune('a'+i)) + string(rune('a'+j))
			if e.TS.IsZero() {
				e.TS = in.Now
			}
			evs = append(evs, e)
		}
	}
	return presence.Fold(evs)
}

// Claude Code's PreToolUse names the call (tool_use_id), its
// PermissionRequest does not, and its PostToolUse names it again with a
// tool_input that may lack a field. The request is keyed by the call it
// belongs to, so the post-use without "description" resolves it.
const (
	ccCommon   = `"session_id":"cc-keys","transcript_path":"/tmp/t.jsonl","cwd":"/home/ana/shop","permission_mode":"default"`
	ccPre      = `{` + ccCommon + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go build ./...","description":"Build"},"tool_use_id":"toolu_9"}`
	ccPerm     = `{` + ccCommon + `,"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"go build ./...","description":"Build"}}`
	ccPostBare = `{` + ccCommon + `,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"go build ./..."},"tool_response":{"stdout":""},"tool_use_id":"toolu_9"}`
	ccPostElse = `{` + ccCommon + `,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"go build ./...","description":"Build"},"tool_response":{"stdout":""},"tool_use_id":"toolu_8"}`
)

func TestPostToolUseWithoutDescriptionResolvesItsRequestByToolUseID(t *testing.T) {
	if s := foldPayloads(t, ccPre, ccPerm); s.Activity != presence.ActivityNeedsInput {
		t.Fatalf("after the permission request: %s", s.Activity)
	}
	if s := foldPayloads(t, ccPre, ccPerm, ccPostBare); s.Activity != presence.ActivityWorking || len(s.PendingRequests) != 0 {
		t.Fatalf("the same call's post-use without description left %s, pending %q", s.Activity, s.PendingRequests)
	}
}

// Another call with an equal input is not this request's resolution: the
// keys differ by tool_use_id.
func TestPostToolUseOfAnotherCallLeavesTheRequestOpen(t *testing.T) {
	if s := foldPayloads(t, ccPre, ccPerm, ccPostElse); s.Activity != presence.ActivityNeedsInput {
		t.Fatalf("another call's post-use cleared the request: %s", s.Activity)
	}
}
