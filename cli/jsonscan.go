package cli

import (
	"encoding/json"
	"errors"
)

// errScan means a roster entry is not one flat JSON object as the node
// writes them; the caller falls back to encoding/json for its message.
var errScan = errors.New("cli: roster entry is not a JSON object")

// scanObject calls fn with each top-level key of the JSON object b and the
// raw bytes of its value. It reads only as far as it must to find where each
// value ends, so a roster of thousands of entries is read at memory speed;
// it is not a validator (the node wrote the bytes).
func scanObject(b []byte, fn func(key, val []byte)) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errScan
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return errScan
		}
		end := stringEnd(b, i)
		if end < 0 {
			return errScan
		}
		key := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return errScan
		}
		i = skipWS(b, i+1)
		vend := valueEnd(b, i)
		if vend < 0 {
			return errScan
		}
		fn(key, b[i:vend])
		i = skipWS(b, vend)
		if i >= len(b) {
			return errScan
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return nil
		default:
			return errScan
		}
	}
	return errScan
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just after the string that starts at b[i]
// (a quote), or -1.
func stringEnd(b []byte, i int) int {
	// A plain loop: the node's strings are short, where it beats
	// bytes.IndexByte's per-call cost.
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index just after the JSON value at b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// jsonString decodes a raw JSON string value; anything else (null, a
// number) is "".
func jsonString(val []byte) string {
	if len(val) < 2 || val[0] != '"' {
		return ""
	}
	inner := val[1 : len(val)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(inner)
	}
	var s string
	if json.Unmarshal(val, &s) != nil {
		return ""
	}
	return s
}
