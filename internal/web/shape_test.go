package web

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The web layer holds concrete services (services.go) and the ports their
// domains declare: it declares at most a few interfaces of its own, reads
// no storage package, and keeps each handler group to what a reader can
// hold in mind (docs/development.md, "Adding a page").
func TestTheWebLayerKeepsItsShape(t *testing.T) {
	const maxInterfaces, maxHandlers = 5, 25
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var interfaces []string
	methods := map[string]int{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasSuffix(path, "/internal/storage") || strings.HasSuffix(path, "/internal/tablestore") {
				t.Errorf("%s imports %s: read through the domain's port instead", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.InterfaceType:
				interfaces = append(interfaces, fset.Position(n.Pos()).String())
			case *ast.TypeSpec:
				if strings.HasSuffix(n.Name.Name, "Parts") {
					t.Errorf("%s declares %s: handlers hold Services, not a struct of parts per group", name, n.Name.Name)
				}
			case *ast.FuncDecl:
				if n.Recv != nil && len(n.Recv.List) == 1 {
					if star, ok := n.Recv.List[0].Type.(*ast.StarExpr); ok {
						if id, ok := star.X.(*ast.Ident); ok {
							methods[id.Name]++
						}
					}
				}
			}
			return true
		})
	}
	if len(interfaces) > maxInterfaces {
		t.Errorf("internal/web declares %d interfaces (at most %d): hold the concrete service, or its domain's port\n\t%s",
			len(interfaces), maxInterfaces, strings.Join(interfaces, "\n\t"))
	}
	for _, group := range []string{"Intake", "SignIn", "CircuitPages", "SwitchPages", "LinkPages", "HostPanels", "DownstreamPages",
		"AppPages", "JobPages", "WindowPages", "NotifyPages", "OpsPages", "TeamPages", "TokenPages"} {
		switch n := methods[group]; {
		case n == 0:
			t.Errorf("handler group %s has no methods: is it still a group?", group)
		case n > maxHandlers:
			t.Errorf("handler group %s has %d methods (at most %d): give a part of it a room of its own", group, n, maxHandlers)
		}
	}
}
