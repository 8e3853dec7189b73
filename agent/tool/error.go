package tool

import "fmt"

// Error is the structured error a model receives, inside an error Result:
//
//	{"code":"path_refused","message":"...","path":"../x"}
//
// Tools return it as their Go error; ErrorResult and Call.Run turn it into the
// result.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Path is the workspace-relative path at fault, for file tools.
	Path string `json:"path,omitempty"`
	// Failures lists every failing JSON pointer of an invalid input.
	Failures []FieldFailure `json:"failures,omitempty"`
}

// FieldFailure is one way an input fails its schema.
type FieldFailure struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s: %s (path %q)", e.Code, e.Message, e.Path)
	}
	return e.Code + ": " + e.Message
}

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// PathErrorf returns an *Error about the workspace-relative path p.
func PathErrorf(code, p, format string, args ...any) *Error {
	return &Error{Code: code, Path: p, Message: fmt.Sprintf(format, args...)}
}

// Error codes. A model reads them; keep them stable.
const (
	// CodeUnknownTool: no tool has the called name.
	CodeUnknownTool = "unknown_tool"
	// CodeInvalidInput: the input is not JSON, fails the schema, or
	// combines parameters the tool does not accept together.
	CodeInvalidInput = "invalid_input"
	// CodePathRefused: the path is empty, absolute, starts with ~, contains
	// NUL, leaves the workspace, or goes through a symlink that does.
	CodePathRefused = "path_refused"
	// CodeNotFound: the path does not exist.
	CodeNotFound = "not_found"
	// CodeExists: the file exists and the operation would not replace it.
	CodeExists = "exists"
	// CodeIsDirectory / CodeNotDirectory: the path is of the wrong kind.
	CodeIsDirectory  = "is_directory"
	CodeNotDirectory = "not_directory"
	// CodeBinaryFile: the file looks binary (it has a NUL byte).
	CodeBinaryFile = "binary_file"
	// CodeTooLarge: the file is larger than the tool handles.
	CodeTooLarge = "too_large"
	// CodeOutOfRange: line numbers outside the file.
	CodeOutOfRange = "out_of_range"
	// CodeTimeout: the call ran past its deadline and was stopped.
	CodeTimeout = "timeout"
	// CodeCancelled: the call was cancelled (job cancelled, shutdown).
	CodeCancelled = "cancelled"
	// CodeInterrupted: the agent stopped (a crash, a restart) while the
	// call was pending; a resumed session reports it and never runs it
	// again (§13.3).
	CodeInterrupted = "interrupted"
	// CodeExitStatus: an external tool exited non-zero or was killed.
	CodeExitStatus = "exit_status"
	// CodeBadOutput: an external or host tool did not answer one valid
	// result object.
	CodeBadOutput = "bad_output"
	// CodeToolError: an external tool reported an error without a code.
	CodeToolError = "tool_error"
	// CodeSecretUnavailable: a secret the tool is granted is not bound.
	CodeSecretUnavailable = "secret_unavailable"
	// CodeIO: the filesystem refused an operation.
	CodeIO = "io_error"
	// CodeHost: choird could not run a host tool.
	CodeHost = "host_error"
	// CodeInternal: a bug or an unexpected failure in the tool.
	CodeInternal = "internal"
)
