package modelconf

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/model"
)

// AdminMethods are the model.* admin methods over s.
func AdminMethods(s *Store) []admin.Method {
	return []admin.Method{
		{Name: "model.clear", Perm: admin.Owner, Summary: "remove the model configuration and key; running turns stop (key_revoked)", Handle: s.adminClear},
		{Name: "model.set", Perm: admin.Owner, Summary: "set the model (the key comes from ctl's stdin)", Handle: s.adminSet},
		{Name: "model.show", Perm: admin.Owner, Summary: "show the model configuration (never the key)", Handle: s.adminShow},
	}
}

// StatusSection is the "model" section of `agentosd ctl status`.
func StatusSection(s *Store) admin.StatusSection {
	return admin.StatusSection{Name: "model", Read: func(context.Context) (any, error) { return s.Show(), nil }}
}

// CtlVerbs are the `agentosd ctl model …` verbs.
func CtlVerbs() []admin.Verb {
	return []admin.Verb{
		{Group: "model", Name: "set", Method: "model.set",
			Args:    "--provider openai|anthropic|scripted [--base-url U] [--model M] [--choices a,b] [--script F] [--key-stdin]",
			Summary: "set the model; with --key-stdin the key is read from stdin", Params: setParams, Text: printInfo},
		{Group: "model", Name: "show", Method: "model.show", Summary: "show the model configuration", Text: printInfo},
		{Group: "model", Name: "clear", Method: "model.clear", Summary: "remove the model configuration and key; running turns stop", Text: printInfo},
	}
}

// SetParams are model.set's params. Key is absent to keep the stored key.
type SetParams struct {
	Provider string   `json:"provider"`
	BaseURL  string   `json:"baseUrl,omitempty"`
	Model    string   `json:"model,omitempty"`
	Choices  []string `json:"choices,omitempty"`
	Script   string   `json:"script,omitempty"`
	Key      *string  `json:"key,omitempty"`
}

func (s *Store) adminSet(_ context.Context, c *admin.Call) (any, error) {
	var p SetParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	cfg := model.Config{Provider: p.Provider, BaseURL: p.BaseURL, Model: p.Model, Choices: p.Choices, Script: p.Script}
	if err := s.Set(cfg, p.Key); err != nil {
		return nil, err
	}
	return s.Show(), nil
}

func (s *Store) adminShow(_ context.Context, c *admin.Call) (any, error) {
	if err := c.Decode(&struct{}{}); err != nil {
		return nil, err
	}
	return s.Show(), nil
}

func (s *Store) adminClear(_ context.Context, c *admin.Call) (any, error) {
	if err := c.Decode(&struct{}{}); err != nil {
		return nil, err
	}
	if err := s.Clear(); err != nil {
		return nil, err
	}
	return s.Show(), nil
}

// setParams reads the flags; the key only ever from stdin.
func setParams(args []string, stdin io.Reader) (any, error) {
	fs := flag.NewFlagSet("model set", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var p SetParams
	var choices string
	keyStdin := fs.Bool("key-stdin", false, "read the key from stdin")
	fs.StringVar(&p.Provider, "provider", "", "")
	fs.StringVar(&p.BaseURL, "base-url", "", "")
	fs.StringVar(&p.Model, "model", "", "")
	fs.StringVar(&choices, "choices", "", "")
	fs.StringVar(&p.Script, "script", "", "")
	if err := fs.Parse(args); err != nil {
		// The flag package quotes what it could not parse; that may be
		// the key, so only the fact is reported.
		return nil, admin.Usagef("unknown or incomplete flag")
	}
	if fs.NArg() > 0 {
		// Not echoed: a stray argument may well be the key itself.
		return nil, admin.Usagef("unexpected argument (the key is never an argument: use --key-stdin)")
	}
	if p.Provider == "" {
		return nil, admin.Usagef("--provider is required")
	}
	if choices != "" {
		for _, c := range strings.Split(choices, ",") {
			if c = strings.TrimSpace(c); c != "" {
				p.Choices = append(p.Choices, c)
			}
		}
	}
	if *keyStdin {
		k, err := model.KeyFromReader(stdin)
		if err != nil {
			return nil, admin.Usagef("--key-stdin: %v", err)
		}
		p.Key = &k
	}
	return p, nil
}

func printInfo(w io.Writer, raw json.RawMessage) error {
	var in Info
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	if !in.Configured {
		_, err := fmt.Fprintln(w, "no model configured")
		return err
	}
	fmt.Fprintf(w, "provider: %s\nbase URL: %s\nmodel: %s\n", in.Provider, in.BaseURL, in.Model)
	if len(in.Choices) > 0 {
		fmt.Fprintf(w, "choices: %s\n", strings.Join(in.Choices, ", "))
	}
	if in.Script != "" {
		fmt.Fprintf(w, "script: %s\n", in.Script)
	}
	fmt.Fprintf(w, "key set: %v\nusable: %v", in.KeySet, in.Usable)
	if in.Problem != "" {
		fmt.Fprintf(w, " (%s)", in.Problem)
	}
	_, err := fmt.Fprintln(w)
	return err
}
