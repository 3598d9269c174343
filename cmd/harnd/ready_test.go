package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/harn-dev/harn/cli/daemon"
)

// TestStartPrintsTheBoardAndTheNextCommand: a node started on a terminal
// prints the board's URL with its token and the next commands, quoted as
// they run; into a log it writes one JSON record with the board's address
// and the command that prints the URL, never the token.
func TestStartPrintsTheBoardAndTheNextCommand(t *testing.T) {
	r := readyInfo{name: "vm", boardURL: "http://127.0.0.1:7713/?token=s3cret0123456789",
		hints: daemon.NodeHints{WebURL: "harn web url", Next: []string{"harn hook install claude-code", "harn agents list"}}}
	var term, logs bytes.Buffer
	announce(&term, true, slog.New(slog.NewJSONHandler(&logs, nil)), r)
	out := term.String()
	for _, want := range []string{"http://127.0.0.1:7713/?token=s3cret0123456789", "`harn hook install claude-code`, then `harn agents list`", "`harn web url`"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output %q lacks %q", out, want)
		}
	}
	if logs.Len() != 0 {
		t.Errorf("on a terminal the log got %q", logs.String())
	}

	term.Reset()
	announce(&term, false, slog.New(slog.NewJSONHandler(&logs, nil)), r)
	if term.Len() != 0 {
		t.Errorf("into a log, plain lines too: %q", term.String())
	}
	if strings.Contains(logs.String(), "s3cret") || strings.Count(logs.String(), "\n") != 1 {
		t.Fatalf("log %q: want one record without the token", logs.String())
	}
	var rec struct {
		Board         string   `json:"board"`
		BoardSignedIn string   `json:"board_signed_in"`
		Next          []string `json:"next"`
	}
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Board != "http://127.0.0.1:7713/" || rec.BoardSignedIn != "harn web url" || strings.Join(rec.Next, ";") != "harn hook install claude-code;harn agents list" {
		t.Errorf("record %s", logs.String())
	}
}
