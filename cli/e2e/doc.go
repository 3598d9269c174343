// Package e2e runs harn end to end: it builds the real binary once, starts
// real `harn node` processes on temporary data dirs, feeds agents' native
// hook JSON to real `harn hook <agent>` processes and checks what the
// operator commands (`harn agents ... --json`, `harn node ...`) report.
//
// Everything lives in _test.go files; this file only names the package.
// Set HARN_BIN to reuse a prebuilt binary instead of building one.
package e2e
