package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/localapi"
	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// decideServer is a node's local service for the hook's decision path: its
// Append answers the call's question when withDecision is set (a node that
// knows decide), and its Decide refuses every call.
type decideServer struct {
	api.LocalServer  // nil: only Append and Decide are called
	withDecision     bool
	appends, decides atomic.Int32
	askedInAppend    atomic.Bool
}

func (s *decideServer) Append(_ context.Context, req *api.AppendRequest) (*api.AppendResponse, error) {
	s.appends.Add(1)
	out := &api.AppendResponse{}
	if req.Decide != nil {
		s.askedInAppend.Store(true)
		if s.withDecision {
			out.Decision = &api.DecideResponse{Decision: taskwire.DecideDeny, Reason: "refused in the append"}
		}
	}
	return out, nil
}

func (s *decideServer) Decide(context.Context, *api.DecideRequest) (*api.DecideResponse, error) {
	s.decides.Add(1)
	return &api.DecideResponse{Decision: taskwire.DecideDeny, Reason: "refused by Decide"}, nil
}

func (s *decideServer) Diagnose(context.Context, *api.DiagnoseRequest) (*api.DiagnoseResponse, error) {
	return &api.DiagnoseResponse{}, nil
}

// TestHookAsksTheCallsQuestionInItsAppend: a tool call's hook asks the
// pre-call question in the Append that stores its events and uses the
// answer given there (one round trip); a node that gives no answer there
// (its events were spooled, say) is asked with Decide. An event that is
// not a tool call asks nothing.
func TestHookAsksTheCallsQuestionInItsAppend(t *testing.T) {
	pre := `{"session_id":"s1","hook_event_name":"PreToolUse","cwd":"/tmp","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}`
	start := `{"session_id":"s1","hook_event_name":"SessionStart","cwd":"/tmp","source":"startup"}`
	for _, c := range []struct {
		name         string
		withDecision bool
		payload      string
		wantReason   string
		wantDecides  int32
		wantAsked    bool
	}{
		{"a node that answers in the append", true, pre, "refused in the append", 0, true},
		{"a node that gives no answer in the append", false, pre, "refused by Decide", 1, true},
		{"not a tool call", true, start, "", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			lis, sock := unixListener(t, "hd")
			dir := filepath.Dir(sock)
			srv := &decideServer{withDecision: c.withDecision}
			w := localapi.New(lis, api.LocalMethods(srv))
			go w.Run()
			defer w.Close()
			defer lis.Close()
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "cfg"))
			t.Setenv("HARN_CONFIG", "")
			t.Setenv("HARN_TASK", "")
			var out bytes.Buffer
			code := Main([]string{"hook", "claude-code", "--data-dir", dir, "--socket", sock},
				strings.NewReader(c.payload), &out, io.Discard)
			if code != hook.ExitOK {
				t.Fatalf("exit %d", code)
			}
			if srv.appends.Load() != 1 {
				t.Fatalf("%d appends, want 1", srv.appends.Load())
			}
			if srv.askedInAppend.Load() != c.wantAsked {
				t.Fatalf("question in the append: %v, want %v", srv.askedInAppend.Load(), c.wantAsked)
			}
			if got := srv.decides.Load(); got != c.wantDecides {
				t.Fatalf("%d Decide calls, want %d", got, c.wantDecides)
			}
			if c.wantReason == "" {
				if out.Len() != 0 {
					t.Fatalf("output %q, want none", out.String())
				}
				return
			}
			if !strings.Contains(out.String(), `"deny"`) || !strings.Contains(out.String(), c.wantReason) {
				t.Fatalf("output %q, want a denial with %q", out.String(), c.wantReason)
			}
		})
	}
}
