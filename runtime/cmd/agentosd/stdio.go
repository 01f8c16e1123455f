package main

import (
	"context"
	"flag"
	"os"

	"github.com/agentoslab/agentlab/runtime/daemon"
)

// stdioCmd serves ACP on stdin/stdout. It exits 0 when stdin ends and the
// tasks it started have finished (SIGTERM stops them sooner).
func stdioCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	data := fs.String("data", "", "data directory (required)")
	keyFile := fs.String("model-key-file", "", "file holding the model key (mode 0600)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if *data == "" {
		fs.Usage()
		return exitError(2)
	}
	log, err := logger(*level)
	if err != nil {
		return err
	}
	return daemon.Stdio(ctx, &daemon.Options{
		Data: *data, Version: version, ModelKeyFile: *keyFile, Tools: testTools, Logger: log,
	}, os.Stdin, os.Stdout)
}
