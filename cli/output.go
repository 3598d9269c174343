package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"
)

func addJSONFlag(c *cobra.Command) {
	c.Flags().Bool("json", false, "print JSON with stable field names")
}

func asJSON(c *cobra.Command) bool {
	v, _ := c.Flags().GetBool("json")
	return v
}

func writeJSON(c *cobra.Command, v any) error {
	enc := json.NewEncoder(c.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
