package taskwire

import "strings"

// A permission request's id names the node that holds it:
// "r-<ulid>@<node>". An answer or a lookup goes to that node alone. An id
// without the node (an older node's "r-<ulid>") names none; a harn task's
// confirmation is named by its call id and found by its task.

// RequestID is the id of a permission request opened at unique on node.
func RequestID(unique, node string) string {
	if node == "" {
		return "r-" + unique
	}
	return "r-" + unique + "@" + node
}

// RequestNode is the node a request id names; ok is false when it names
// none.
func RequestNode(id string) (node string, ok bool) {
	if !strings.HasPrefix(id, "r-") {
		return "", false
	}
	i := strings.LastIndexByte(id, '@')
	if i < 0 || i == len(id)-1 {
		return "", false
	}
	return id[i+1:], true
}
