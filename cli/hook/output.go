package hook

import (
	"encoding/json"

	"github.com/spf13/cobra"
)

func AddJSONFlag(c *cobra.Command) {
	c.Flags().Bool("json", false, "print JSON with stable field names")
}

func AsJSON(c *cobra.Command) bool {
	v, _ := c.Flags().GetBool("json")
	return v
}

// writeSortedJSON writes v as JSON with every object's keys sorted (the
// form a task action's answer has always printed in).
func WriteSortedJSON(c *cobra.Command, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	return WriteJSON(c, m)
}

func WriteJSON(c *cobra.Command, v any) error {
	enc := json.NewEncoder(c.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
