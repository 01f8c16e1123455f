package host

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/ext/manifest"
	"github.com/agentoslab/agentlab/runtime/ext/skills"
)

// Plugin statuses and the reasons of UNAVAILABLE (spec §6.4).
const (
	StatusReady            = "READY"
	StatusUnavailable      = "UNAVAILABLE"
	StatusSignatureChanged = "SIGNATURE_CHANGED"

	ReasonAssetsMissing    = "ASSETS_MISSING"
	ReasonManifestRejected = "MANIFEST_REJECTED"
	ReasonNoUsableServer   = "NO_USABLE_SERVER"
	ReasonNameConflict     = "NAME_CONFLICT"
)

// Reasons a declared server is not used.
const (
	// ServerNotInPackage: plugin.json names a service the package's
	// app.json does not declare (with the same server name) — the
	// analogue of a service outside the package, not exported, or not
	// guarded by BIND_MCP_SERVICE.
	ServerNotInPackage = "NOT_IN_PACKAGE"
	// ServerRemote: an mcp.json server; remote plugin servers are not
	// implemented (seed §5.11).
	ServerRemote = "REMOTE_SERVER"
)

// pluginDirName is the assets directory of a bundle's plugin: one plugin
// per app.
const pluginDirName = "agent-plugin"

// declaredServer is one server a plugin declares.
type declaredServer struct {
	Name    string `json:"name"`
	Service string `json:"service,omitempty"`
	// Rejected says why the server is not used ("" = usable).
	Rejected string `json:"rejected,omitempty"`
}

// SkillProblem is a problem of one skill's SKILL.md.
type SkillProblem struct {
	Dir     string      `json:"dir"`
	Code    skills.Code `json:"code"`
	Line    int         `json:"line,omitempty"`
	Message string      `json:"message"`
}

// scanned is what one package's files say about its plugin.
type scanned struct {
	ID            string
	Package       apps.Package
	Name          string // "" when the manifest is missing or rejected
	DisplayName   string
	Version       string
	Status        string
	Reason        string
	Problems      []manifest.Problem
	Unsupported   []manifest.Unsupported
	Servers       []declaredServer
	Skills        []skills.Skill
	SkillProblems []SkillProblem
	Files         map[string]bool
}

// usableServers are the servers a call can reach.
func (s *scanned) usableServers() []declaredServer {
	var out []declaredServer
	for _, d := range s.Servers {
		if d.Rejected == "" {
			out = append(out, d)
		}
	}
	return out
}

// scanPackage reads one package's plugin (PluginScanLogic): nil when the
// package has no plugin at all. Nothing is started.
func scanPackage(p apps.Package, files Files) *scanned {
	list, exists, err := files.List(p)
	if !exists || err != nil {
		if !slices.ContainsFunc(p.Services, func(s apps.Service) bool { return s.Kind == apps.ServiceKindMCP }) {
			// No MCP server (none at all, or only ACI services): no
			// plugin is missing.
			return nil
		}
		// Services but no plugin directory: an anchor without assets.
		return &scanned{ID: p.Name + "/", Package: p, Status: StatusUnavailable, Reason: ReasonAssetsMissing}
	}
	s := &scanned{ID: p.Name + "/" + pluginDirName, Package: p, Files: map[string]bool{}}
	for _, f := range list {
		s.Files[f] = true
	}
	readJSON := func(name string) ([]byte, bool) {
		if !s.Files[name] {
			return nil, false
		}
		b, err := files.Read(p, name, manifest.MaxJSONBytes+1)
		if err != nil || len(b) > manifest.MaxJSONBytes {
			return nil, false // unreadable or too large: treated as missing
		}
		return b, true
	}
	raw, ok := readJSON("plugin.json")
	if !ok {
		s.Status, s.Reason = StatusUnavailable, ReasonAssetsMissing
		return s
	}
	man, problems := manifest.ParsePlugin(raw)
	var mcp *manifest.MCPConfig
	if mraw, ok := readJSON("mcp.json"); ok {
		var mp []manifest.Problem
		mcp, mp = manifest.ParseMCP(mraw)
		problems = append(problems, mp...)
	}
	if man != nil && mcp != nil {
		problems = append(problems, manifest.CheckServers(man, mcp)...)
	}
	if len(problems) > 0 || man == nil {
		s.Status, s.Reason, s.Problems = StatusUnavailable, ReasonManifestRejected, problems
		return s
	}
	s.Name, s.DisplayName, s.Version = man.Name, man.DisplayName(), man.Version
	s.Unsupported = append(s.Unsupported, man.Unsupported...)
	for _, srv := range man.Servers {
		d := declaredServer{Name: srv.Name, Service: srv.Service}
		svc, ok := serviceNamed(p, srv.Service)
		if !ok || svc.Server != srv.Name || svc.Kind != apps.ServiceKindMCP {
			d.Rejected = ServerNotInPackage
		}
		s.Servers = append(s.Servers, d)
	}
	if mcp != nil {
		for _, r := range mcp.Servers {
			reason := r.Unsupported
			if reason == "" {
				reason = ServerRemote
			}
			s.Servers = append(s.Servers, declaredServer{Name: r.Name, Rejected: reason})
			s.Unsupported = append(s.Unsupported, manifest.Unsupported{Reason: reason, Path: "mcp.json/mcpServers/" + r.Name})
		}
	}
	s.scanSkills(files)
	hooks := man.Hooks.Declared || s.Files["hooks/hooks.json"]
	if len(s.Servers) > 0 && len(s.usableServers()) == 0 && len(s.Skills) == 0 && !hooks {
		s.Status, s.Reason = StatusUnavailable, ReasonNoUsableServer
		return s
	}
	s.Status = StatusReady
	return s
}

func serviceNamed(p apps.Package, name string) (apps.Service, bool) {
	for _, svc := range p.Services {
		if svc.Name == name {
			return svc, true
		}
	}
	return apps.Service{}, false
}

// scanSkills reads skills/<dir>/SKILL.md of the file list (exactly three
// segments). Problems are recorded per skill and never break the others.
func (s *scanned) scanSkills(files Files) {
	var dirs []string
	for f := range s.Files {
		segs := strings.Split(f, "/")
		if len(segs) == 3 && segs[0] == "skills" && segs[2] == skills.DefaultSkillFileName {
			dirs = append(dirs, segs[1])
		}
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		if len(s.Skills) == skills.MaxSkillsPerPlugin {
			break
		}
		b, err := files.Read(s.Package, "skills/"+dir+"/"+skills.DefaultSkillFileName, skills.MaxFrontmatterBytes)
		if err != nil {
			code := skills.Unreadable
			if errors.Is(err, os.ErrNotExist) {
				code = skills.FileMissing
			}
			s.SkillProblems = append(s.SkillProblems, SkillProblem{Dir: dir, Code: code, Message: "SKILL.md could not be read"})
			continue
		}
		fm, problems := skills.ParseFrontmatter(b)
		for _, pr := range problems {
			s.SkillProblems = append(s.SkillProblems, SkillProblem{Dir: dir, Code: pr.Code, Line: pr.Line, Message: pr.Message})
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // not text: no skill
		}
		rawName, _ := fm.Name()
		name, ok := skills.SkillName(rawName, dir)
		if !ok {
			s.SkillProblems = append(s.SkillProblems, SkillProblem{Dir: dir, Code: skills.InvalidName, Message: "neither the name nor the directory is a valid skill name"})
			continue
		}
		desc, _ := fm.Description()
		s.Skills = append(s.Skills, skills.Skill{
			Plugin: s.Name, PluginID: s.ID, Dir: dir, Name: name, Description: skills.CleanDescription(desc),
		})
	}
}
