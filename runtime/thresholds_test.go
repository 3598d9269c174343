package runtime

import (
	"errors"
	"testing"
)

// Seed 001: the admission gate sits at 80% of the usable input budget:
// an item is admitted while active + base + need + margin stays within
// it, and refused one token over.
func TestAdmissionCeilingIs80PercentOfTheUsableInput(t *testing.T) {
	b := Budget{UsableInput: 10_000, Base: 1_000}
	if b.Ceiling() != 8_000 {
		t.Fatalf("ceiling %d of 10000, want 8000 (80%%)", b.Ceiling())
	}
	fits := b.Ceiling() - b.Base - b.Margin() - 500
	if err := b.Admit("x", fits, 500); err != nil {
		t.Fatalf("an item up to the 80%% line was refused: %v", err)
	}
	var ae *AdmissionError
	if err := b.Admit("x", fits+1, 500); !errors.As(err, &ae) || ae.Ceiling != 8_000 {
		t.Fatalf("an item one token over the 80%% line: %v", err)
	}
}
