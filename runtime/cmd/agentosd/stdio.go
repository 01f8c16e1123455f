package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentoslab/agentlab/runtime/daemon"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/providers"
)

// stdioCmd serves ACP on stdin/stdout. It exits 0 when stdin ends and the
// tasks it started have finished (SIGTERM stops them sooner).
func stdioCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentosd stdio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "data directory (required)")
	keyFile := fs.String("model-key-file", "", "file holding the model key (mode 0600)")
	provider := fs.String("model", "", `model provider for this run instead of the data directory's: "scripted" (no key)`)
	scriptFile := fs.String("model-script", "", "model script (FORMAT.md of runtime/model/script) for this run; implies --model scripted")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *data == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "agentosd stdio: --data DIR is required and no arguments are taken")
		fs.Usage()
		return 2
	}
	cfg, err := stdioModel(*provider, *scriptFile)
	if err != nil {
		fmt.Fprintf(stderr, "agentosd stdio: %v\n", err)
		return 2
	}
	log, err := logger(stderr, *level)
	if err != nil {
		fmt.Fprintf(stderr, "agentosd stdio: %v\n", err)
		return 2
	}
	err = daemon.Stdio(ctx, &daemon.Options{
		Data: *data, Version: version, ModelKeyFile: *keyFile, Model: cfg, Tools: testTools(), Logger: log,
	}, os.Stdin, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "agentosd stdio: %v\n", err)
		return 1
	}
	return 0
}

// stdioModel is the model of --model and --model-script (nil: the data
// directory's). Only the scripted provider runs without a configuration;
// the others need a key and an endpoint, which the owner sets with ctl.
func stdioModel(provider, scriptFile string) (*model.Config, error) {
	switch {
	case provider == "" && scriptFile == "":
		return nil, nil
	case provider != "" && provider != providers.Scripted:
		return nil, fmt.Errorf("--model %q: only %q runs without a configuration; set an %s or %s model with agentosd ctl model set --provider … --key-stdin",
			provider, providers.Scripted, providers.OpenAI, providers.Anthropic)
	}
	cfg := &model.Config{Provider: providers.Scripted, Model: providers.Scripted}
	if scriptFile != "" {
		abs, err := filepath.Abs(scriptFile)
		if err != nil {
			return nil, fmt.Errorf("--model-script: %w", err)
		}
		cfg.Script = abs
	}
	return cfg, nil
}
