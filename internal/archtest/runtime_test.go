package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// source is one parsed non-test Go file, with its path relative to the
// repository root.
type source struct {
	path string
	file *ast.File
	fset *token.FileSet
}

// sources parses every non-test Go file under the repository directories
// dirs, whatever its build tags (a tagged file registers as much as any).
func sources(t *testing.T, dirs ...string) []source {
	t.Helper()
	var out []source
	for _, dir := range dirs {
		root := filepath.Join("..", "..", dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join("..", ".."), path)
			out = append(out, source{path: filepath.ToSlash(rel), file: f, fset: fset})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no sources under %v", dirs)
	}
	return out
}

func (s source) pos(n ast.Node) string {
	p := s.fset.Position(n.Pos())
	return s.path + ":" + strconv.Itoa(p.Line)
}

// Mains and composition roots wire; nothing in the runtime registers
// itself from init(). An init function that sets up behaviour (a method
// table, a command map, a test build's tools) hides a dependency that
// then fails only at run time. No exceptions are needed today; one that
// ever is gets listed here with its reason.
func TestNoInitInRuntime(t *testing.T) {
	allowed := map[string]string{}
	for _, s := range sources(t, "runtime") {
		for _, d := range s.file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Name.Name != "init" {
				continue
			}
			if _, ok := allowed[s.path]; !ok {
				t.Errorf("%s: func init in the runtime: wire it in the composition root (runtime/daemon) or main instead", s.pos(fd))
			}
		}
	}
}

// The admin package is the protocol only (permission table, framing,
// client, ctl): no service locator keyed by type, no feature's backend.
// Features hand their methods to the composition root as values.
func TestAdminIsOnlyTheProtocol(t *testing.T) {
	for _, p := range listPackages(t) {
		switch p.ImportPath {
		case module + "/runtime/admin":
			for _, imp := range p.Imports {
				if imp == "reflect" || (strings.HasPrefix(imp, module+"/runtime/") && !slices.Contains([]string{
					module + "/runtime/errcode", module + "/runtime/transport",
					module + "/runtime/internal/rpc", module + "/runtime/internal/faultinject",
				}, imp)) {
					t.Errorf("runtime/admin imports %s: the admin API is the protocol only", imp)
				}
			}
		case module + "/runtime/access":
			t.Errorf("runtime/access is back: serve is wired in runtime/daemon only")
		}
	}
}

// listenerFiles are the only files of the runtime that accept connections
// or open listening sockets themselves, each with its reason. Every other
// listener is a transport.Service (TestEveryListenerIsAService).
var listenerFiles = map[string]string{
	"runtime/transport/socket.go":                   "the one Listen and the one Accept that reads SO_PEERCRED",
	"runtime/transport/service.go":                  "the one accept loop (Service), with its admission hook",
	"runtime/sdk/plugin/server.go":                  "Serve opens the app's socket and hands it to ServeListener, a Service",
	"runtime/sdk/plugin/command.go":                 "RunServe opens the app's socket and hands it to ServeListener, a Service",
	"runtime/model/internal/modeltest/modeltest.go": "test HTTP model endpoints on TCP for the provider tests, not a runtime socket",
}

// servers are the runtime's socket servers and the field that holds each
// one's transport.Service (the desktop ACP socket of the core's test
// mode is a *transport.Service of the System itself).
var servers = []struct{ file, typ, field string }{
	{"runtime/admin/server.go", "Server", "svc"},         // @agentos-admin
	{"runtime/callerchan/server.go", "Server", "svc"},    // @agentos-caller
	{"runtime/bridge/bridge.go", "Bridge", "svc"},        // @agentos-acp, desktop pairing
	{"runtime/daemon/system.go", "System", "ACP"},        // @agentos-acp, uid-gated (tests)
	{"runtime/ext/broker/broker.go", "Broker", "svc"},    // @agentos-ext, the extension host's link
	{"runtime/apps/launcher/server.go", "Server", "svc"}, // @agentos-launcher
}

// TestEveryListenerIsAService lists every socket server of the runtime
// and proves each runs on transport.Service: its struct holds one, and no
// file outside listenerFiles opens a listener or accepts a connection
// (an accept loop of its own would skip the Service's admission, its
// connection tracking and its shutdown).
func TestEveryListenerIsAService(t *testing.T) {
	srcs := sources(t, "runtime")
	for _, s := range srcs {
		if _, ok := listenerFiles[s.path]; ok {
			continue
		}
		ast.Inspect(s.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			name := sel.Sel.Name
			pkg := ""
			if id, ok := sel.X.(*ast.Ident); ok {
				pkg = id.Name
			}
			switch {
			case (name == "Accept" || name == "AcceptUnix") && len(call.Args) == 0:
				t.Errorf("%s: an accept loop outside transport.Service", s.pos(call))
			case pkg == "net" && strings.HasPrefix(name, "Listen"),
				pkg == "transport" && name == "Listen":
				t.Errorf("%s: a listener outside transport.Service (use Service.Start, or Service.Serve for a socket opened beforehand)", s.pos(call))
			}
			return true
		})
	}
	for _, sv := range servers {
		i := slices.IndexFunc(srcs, func(s source) bool { return s.path == sv.file })
		if i < 0 {
			t.Errorf("%s: missing (a server moved? update the list)", sv.file)
			continue
		}
		if !hasServiceField(srcs[i].file, sv.typ, sv.field) {
			t.Errorf("%s: %s.%s is not a transport.Service", sv.file, sv.typ, sv.field)
		}
	}
	// The plugin SDK serves on a Service too (its listener is a local).
	if i := slices.IndexFunc(srcs, func(s source) bool { return s.path == "runtime/sdk/plugin/server.go" }); i < 0 ||
		!mentionsService(srcs[i].file, "ServeListener") {
		t.Error("runtime/sdk/plugin/server.go: ServeListener does not serve on a transport.Service")
	}
}

// hasServiceField reports whether struct typ has field of type
// transport.Service or *transport.Service.
func hasServiceField(f *ast.File, typ, field string) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typ {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, fl := range st.Fields.List {
			for _, nm := range fl.Names {
				if nm.Name == field && isServiceType(fl.Type) {
					found = true
				}
			}
		}
		return false
	})
	return found
}

func isServiceType(e ast.Expr) bool {
	if st, ok := e.(*ast.StarExpr); ok {
		e = st.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "transport" && sel.Sel.Name == "Service"
}

// mentionsService reports whether function fn declares a
// transport.Service.
func mentionsService(f *ast.File, fn string) bool {
	found := false
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn || fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok && vs.Type != nil && isServiceType(vs.Type) {
				found = true
			}
			return true
		})
	}
	return found
}

// SO_PEERCRED is read in one place, which the runtime and the virtual
// device share: identity is the security boundary of both.
func TestPeerCredInOnePlace(t *testing.T) {
	for _, s := range sources(t, "runtime", "devices", "lab", "sampleapps", "internal") {
		if strings.HasPrefix(s.path, "internal/peercred/") {
			continue
		}
		ast.Inspect(s.file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "SO_PEERCRED" || sel.Sel.Name == "GetsockoptUcred") {
				t.Errorf("%s: peer credentials read outside internal/peercred", s.pos(sel))
			}
			return true
		})
	}
}

// Every JSON-RPC error envelope written outside an RPC engine comes from
// errcode.ErrorLine, with the table's wire data: no literal line and no
// map with "jsonrpc" and "error" keys (a hand-written busy line once
// hard-coded retryable).
func TestOneErrorEnvelope(t *testing.T) {
	for _, s := range sources(t, "runtime") {
		if s.path == "runtime/errcode/envelope.go" {
			continue
		}
		ast.Inspect(s.file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING && strings.Contains(n.Value, `jsonrpc`) && strings.Contains(n.Value, `error`) {
					t.Errorf("%s: a hand-written JSON-RPC error envelope: use errcode.ErrorLine", s.pos(n))
				}
			case *ast.CompositeLit:
				keys := map[string]bool{}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if lit, ok := kv.Key.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							keys[strings.Trim(lit.Value, "\"`")] = true
						}
					}
				}
				if keys["jsonrpc"] && keys["error"] {
					t.Errorf("%s: a JSON-RPC error envelope built by hand: use errcode.ErrorLine", s.pos(n))
				}
			}
			return true
		})
	}
}
