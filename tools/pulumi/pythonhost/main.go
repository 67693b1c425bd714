// Command pulumi-language-python is gpufleet's own Pulumi language host for Python programs and Python policy
// packs, built by scripts/build-pulumi-tools next to the CLI.
//
// Pulumi's own Python host is a Go module of its own that the module proxy does not serve, so it cannot be
// built from pinned modules here. This host speaks the same LanguageRuntime gRPC protocol and starts the same
// executor script (pulumi-language-python-exec, shipped in the sdk/v3 module and copied next to this binary at
// build time). It implements what gpufleet drives: running the program, running policy packs (analyzers) and
// Python plugins, and reporting its version. Dependency discovery is left to the engine, which loads each
// provider when a resource first asks for it; installing dependencies is the project's venv's job (make setup).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	sdk "github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// The executor exits with this code after it printed a message meant for the user: no further error is added.
const exitAfterUserMessage = 32

const executorName = "pulumi-language-python-exec"

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.String("tracing", "", "accepted for compatibility with the engine's command line; unused")
	// Engines built on older SDKs (the YAML host's, loading a Python plugin) also pass the runtime options
	// and the project root as flags; the options are the defaults of those the request carries.
	defaults := map[string]*string{}
	for _, name := range []string{"virtualenv", "toolchain", "typechecker"} {
		defaults[name] = flag.String(name, "", "runtime option "+name+", unless the request gives it")
	}
	flag.String("root", "", "accepted for compatibility with older engines; the request gives the root")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Version)
		return
	}
	self, err := os.Executable()
	if err != nil {
		cmdutil.Exit(fmt.Errorf("cannot find this executable: %w", err))
	}
	executor := filepath.Join(filepath.Dir(self), executorName)
	if _, err := os.Stat(executor); err != nil {
		cmdutil.Exit(fmt.Errorf("missing executor %s: %w", executor, err))
	}
	h := &host{executor: executor, defaults: map[string]string{}}
	for name, value := range defaults {
		if *value != "" {
			h.defaults[name] = *value
		}
	}
	if flag.NArg() > 0 {
		h.engine = flag.Arg(0)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cancel := make(chan bool)
	go func() { <-ctx.Done(); close(cancel) }()
	if h.engine != "" {
		if err := rpcutil.Healthcheck(ctx, h.engine, 5*time.Minute, stop); err != nil {
			cmdutil.Exit(fmt.Errorf("cannot watch the engine: %w", err))
		}
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		cmdutil.Exit(fmt.Errorf("cannot serve the language host: %w", err))
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		cmdutil.Exit(fmt.Errorf("language host stopped: %w", err))
	}
}

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	executor string
	engine   string
	defaults map[string]string // runtime options given as flags
}

// pythonFor resolves the Python that runs a program or plugin from Pulumi.yaml's runtime options
// (toolchain, virtualenv), relative to the project root; `defaults` stand where the request gives none.
func pythonFor(info *pulumirpc.ProgramInfo, plugin bool, defaults map[string]string) (toolchain.Toolchain, error) {
	opts := toolchain.PythonOptions{Root: info.GetRootDirectory(), ProgramDir: info.GetProgramDirectory()}
	options := map[string]any{}
	for key, value := range defaults {
		options[key] = value
	}
	if info.GetOptions() != nil {
		for key, value := range info.GetOptions().AsMap() {
			options[key] = value
		}
	}
	for key, value := range options {
		text, ok := value.(string)
		if !ok {
			return nil, fmt.Errorf("runtime option %s must be a string, not %v", key, value)
		}
		switch key {
		case "virtualenv":
			opts.Virtualenv = text
		case "toolchain":
			switch text {
			case "pip":
				opts.Toolchain = toolchain.Pip
			case "poetry":
				opts.Toolchain = toolchain.Poetry
			case "uv":
				opts.Toolchain = toolchain.Uv
			default:
				return nil, fmt.Errorf("runtime option toolchain %q is not one of pip, poetry, uv", text)
			}
		}
	}
	if plugin && opts.Virtualenv == "" && opts.Toolchain != toolchain.Poetry && opts.Toolchain != toolchain.Uv {
		opts.Virtualenv = "venv"
	}
	return toolchain.ResolveToolchain(opts)
}

func (h *host) Handshake(
	ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engine = req.GetEngineAddress()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

func (h *host) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(
	context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *host) GetProgramDependencies(
	context.Context, *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

func (h *host) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	tc, err := pythonFor(req.GetInfo(), req.GetIsPlugin(), h.defaults)
	if err != nil {
		return err
	}
	return tc.ValidateVenv(server.Context())
}

func (h *host) About(context.Context, *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	return &pulumirpc.AboutResponse{Executable: h.executor, Version: version.Version}, nil
}

func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// Run runs the program through the executor, which connects it to the engine's resource monitor.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	tc, err := pythonFor(req.GetInfo(), false, h.defaults)
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	args := []string{h.executor}
	flagArg := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name, value)
		}
	}
	flagArg("monitor", req.GetMonitorAddress())
	flagArg("engine", h.engine)
	flagArg("project", req.GetProject())
	flagArg("root_directory", req.GetInfo().GetRootDirectory())
	flagArg("stack", req.GetStack())
	flagArg("pwd", req.GetPwd())
	flagArg("dry_run", strconv.FormatBool(req.GetDryRun()))
	flagArg("parallel", strconv.Itoa(int(req.GetParallel())))
	flagArg("organization", req.GetOrganization())
	args = append(args, req.GetInfo().GetEntryPoint())
	args = append(args, req.GetArgs()...)

	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return nil, err
	}
	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("cannot encode the stack's configuration: %w", err)
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secrets, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the stack's secret keys: %w", err)
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secrets))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second

	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if exit.ExitCode() == exitAfterUserMessage {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with code %d", exit.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("cannot run the Python executor: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// RunPlugin runs a policy pack (`python -u -m pulumi.policy <args> <pack dir>`, in the pack's directory,
// with the stack's configuration the engine hands the analyzer) or a Python plugin (`python <dir> <args>`).
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer) error {
	ctx := server.Context()
	analyzer := req.GetKind() == string(apitype.AnalyzerPlugin)
	tc, err := pythonFor(req.GetInfo(), !analyzer, h.defaults)
	if err != nil {
		return err
	}
	var args []string
	if analyzer {
		args = append([]string{"-u", "-m", "pulumi.policy"}, req.GetArgs()...)
		args = append(args, req.GetInfo().GetProgramDirectory())
	} else {
		args = append([]string{req.GetInfo().GetProgramDirectory()}, req.GetArgs()...)
	}
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}

	var proxy *sdk.PolicyProxy
	if analyzer {
		cmd.Dir = req.GetInfo().GetProgramDirectory()
		proxy, stdout, err = sdk.NewPolicyProxy(ctx, stdout)
		if err != nil {
			return fmt.Errorf("cannot start the policy pack proxy: %w", err)
		}
		stack, err := proxy.AwaitConfiguration(ctx)
		if err != nil {
			return fmt.Errorf("cannot get the stack's configuration: %w", err)
		}
		if stack != nil {
			setEnv := func(k, v string) {
				if v != "" {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
			}
			setEnv("PULUMI_ORGANIZATION", stack.GetOrganization())
			setEnv("PULUMI_PROJECT", stack.GetProject())
			setEnv("PULUMI_STACK", stack.GetStack())
			setEnv("PULUMI_DRY_RUN", strconv.FormatBool(stack.GetDryRun()))
			if stack.GetConfig() != nil {
				config, err := json.Marshal(stack.GetConfig())
				if err != nil {
					return fmt.Errorf("cannot encode the stack's configuration: %w", err)
				}
				setEnv("PULUMI_CONFIG", string(config))
			}
		}
	} else {
		cmd.Dir = req.GetPwd()
	}
	cmd.Env = append(cmd.Env, req.GetEnv()...)
	cmd.Stdout, cmd.Stderr = stdout, stderr

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start the Python plugin: %w", err)
	}
	if proxy != nil {
		err = proxy.Attach(ctx, cmd)
	} else {
		err = cmd.Wait()
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if status, ok := exit.Sys().(syscall.WaitStatus); ok {
				return server.Send(&pulumirpc.RunPluginResponse{
					Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(status.ExitStatus())}, //nolint:gosec
				})
			}
		}
		return fmt.Errorf("python plugin failed: %w", err)
	}
	return closer.Close()
}
