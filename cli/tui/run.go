package tui

import (
	"context"
	"errors"
	"io"

	tea "github.com/charmbracelet/bubbletea"
)

// Run runs the TUI on the terminal of in and out until the person leaves
// or ctx ends (SIGTERM); leaving is not an error.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	m, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	prog := tea.NewProgram(m, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithContext(ctx), tea.WithOutput(out), tea.WithInput(in))
	_, err = prog.Run()
	if errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, tea.ErrInterrupted) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
