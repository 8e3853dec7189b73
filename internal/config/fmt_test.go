package config

import "fmt"

func fmtSprintf(format string, v any) string { return fmt.Sprintf(format, v) }
