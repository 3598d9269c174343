// Package e2e runs harn end to end: it builds the real binaries (harn and
// harnd, side by side) once, starts
// real `harn node` processes on temporary data dirs, feeds agents' native
// hook JSON to real `harn hook <agent>` processes and checks what the
// operator commands (`harn agents ... --json`, `harn node ...`) report.
//
// Everything lives in _test.go files; this file only names the package.
// Set HARN_BIN to reuse a prebuilt harn instead of building one; harnd must
// lie beside it (make build writes both into bin/).
package e2e
