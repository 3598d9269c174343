package cli

import (
	"strings"
	"testing"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// pflag shows the first `quoted` word of a flag's usage as its value's
// name: a quoted command there reads as a placeholder ("--gossip-key harn
// keygen"). Every value name is one word.
func TestFlagValueNamesAreOneWord(t *testing.T) {
	hook.WalkCommands(testRoot(), func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
					t.Errorf("%s --%s shows %q as its value name: quote one word, or none", c.CommandPath(), f.Name, name)
				}
			})
		}
	})
}
