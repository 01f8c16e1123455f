//go:build agentosd_testtools

package main

import "github.com/agentoslab/agentlab/runtime/engine/enginetest"

// A test build (go build -tags agentosd_testtools) serves the in-process
// test tools (echo, slow, fail, big, hang) so integration tests can make
// real tool calls against the real binary. Release builds have no tools
// until the extension host is wired.
func init() { testTools = &enginetest.Tools{} }
