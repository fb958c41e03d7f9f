// Package types holds the library's public types and sentinel errors, shared by the root package (which
// re-exports each by alias, so callers import one package) and the internal packages.
package types
