//go:build tools

// Package tools pins what the provider's main package (generated at build time from the module cache, with
// its embedded schema) imports, so `go mod tidy` keeps its dependencies.
package tools

import (
	_ "github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	_ "github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)
