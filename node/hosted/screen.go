package hosted

import (
	"fmt"
	"strings"
)

// screenLocked is what paints the current screen on a fresh terminal:
// clear, each line at its row, the cursor where the agent left it.
func (s *session) screenLocked() []byte {
	var b strings.Builder
	b.WriteString("\x1b[0m\x1b[H\x1b[2J")
	for i, l := range strings.Split(s.emu.Render(), "\n") {
		if i >= s.emu.Height() {
			break
		}
		fmt.Fprintf(&b, "\x1b[%d;1H%s\x1b[0m", i+1, strings.TrimRight(l, "\r"))
	}
	pos := s.emu.CursorPosition()
	fmt.Fprintf(&b, "\x1b[%d;%dH", pos.Y+1, pos.X+1)
	if s.emu.CursorHidden() {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	return []byte(b.String())
}
