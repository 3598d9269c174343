package notify

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// fakeLook finds only the named programs, under /usr/bin.
func fakeLook(found ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		if slices.Contains(found, name) {
			return "/usr/bin/" + name, nil
		}
		return "", exec.ErrNotFound
	}
}

func TestDesktopCommandNotifySendOnLinux(t *testing.T) {
	name, args, ok := DesktopCommand("linux", fakeLook("notify-send", "osascript"), "-title\x1b[1m", "body\nline")
	want := []string{"--app-name=harn", "--", "-title[1m", "body line"}
	if !ok || name != "/usr/bin/notify-send" || !slices.Equal(args, want) {
		t.Fatalf("%v %q %v", ok, name, args)
	}
}

func TestDesktopCommandOsascriptOnMacOS(t *testing.T) {
	name, args, ok := DesktopCommand("darwin", fakeLook("notify-send", "osascript"), `say "hi"`, `x" & do shell script "rm`)
	if !ok || name != "/usr/bin/osascript" {
		t.Fatalf("%v %q", ok, name)
	}
	// The text is passed as argv, never spliced into the script.
	n := len(args)
	if args[n-2] != `say "hi"` || args[n-1] != `x" & do shell script "rm` {
		t.Fatalf("args %q", args)
	}
	for _, a := range args[:n-2] {
		if a != "-e" && a != "on run argv" && a != "end run" && a != "display notification (item 2 of argv) with title (item 1 of argv)" {
			t.Fatalf("unexpected script part %q", a)
		}
	}
}

func TestDesktopCommandUsesWhicheverExists(t *testing.T) {
	if name, _, ok := DesktopCommand("linux", fakeLook("osascript"), "t", "b"); !ok || name != "/usr/bin/osascript" {
		t.Fatalf("%v %q", ok, name)
	}
	if name, _, ok := DesktopCommand("darwin", fakeLook("notify-send"), "t", "b"); !ok || name != "/usr/bin/notify-send" {
		t.Fatalf("%v %q", ok, name)
	}
}

func TestDesktopSkipsQuietlyWhenNeitherExists(t *testing.T) {
	ran := false
	d := &ExecDesktop{goos: "linux", lookPath: fakeLook(), timeout: time.Second,
		run: func(context.Context, string, []string) error { ran = true; return nil }}
	if d.Available() {
		t.Fatal("available with no program")
	}
	if err := d.Notify(context.Background(), "t", "b"); err != nil || ran {
		t.Fatalf("err %v ran %v", err, ran)
	}
}

func TestDesktopNotificationIsBoundedByTimeout(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "notify-send")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	look := func(name string) (string, error) {
		if name == "notify-send" {
			return prog, nil
		}
		return "", exec.ErrNotFound
	}
	d := &ExecDesktop{goos: "linux", lookPath: look, timeout: 200 * time.Millisecond, run: runCommand}
	start := time.Now()
	err := d.Notify(context.Background(), "t", "b")
	if !errors.Is(err, ErrDesktop) {
		t.Fatalf("err %v", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %v", el)
	}
}

func TestDesktopRunsRealProgram(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	prog := filepath.Join(dir, "notify-send")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + out + "\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	look := func(name string) (string, error) {
		if name == "notify-send" {
			return prog, nil
		}
		return "", exec.ErrNotFound
	}
	d := &ExecDesktop{goos: "linux", lookPath: look, timeout: 5 * time.Second, run: runCommand}
	if err := d.Notify(context.Background(), "harn: Sable needs input", "$(touch x); `id`"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "--app-name=harn\n--\nharn: Sable needs input\n$(touch x); `id`\n" {
		t.Fatalf("args %q", got)
	}
}
