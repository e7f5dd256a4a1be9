package cli

import "github.com/urfave/cli/v2"

// urfave/cli works a flag's names out each time it asks for them (a
// regular expression over each name, for the "name, alias" form of v1),
// and it asks often: before a command runs, for each of its flags it
// looks up whether the flag is set, and each lookup of a flag that is not
// set asks every flag before it for its names. For a command of 40 flags
// that is about a thousand matches, 0.3 ms of every run and its largest
// cost between the process's start and the command's work. A command's
// flags are therefore kept in the wrappers below, which answer Names from
// the names worked out once; every other method is the flag's own.
//
// urfave/cli's fish script switches on its own flag types, so
// [clidoc.Doc.FishCompletion] takes the flags out of their wrappers
// (Unwrap) first.

type (
	namedBool struct {
		*cli.BoolFlag
		names []string
	}
	namedString struct {
		*cli.StringFlag
		names []string
	}
	namedStringSlice struct {
		*cli.StringSliceFlag
		names []string
	}
	namedInt struct {
		*cli.IntFlag
		names []string
	}
	namedDuration struct {
		*cli.DurationFlag
		names []string
	}
)

func (f namedBool) Names() []string        { return f.names }
func (f namedString) Names() []string      { return f.names }
func (f namedStringSlice) Names() []string { return f.names }
func (f namedInt) Names() []string         { return f.names }
func (f namedDuration) Names() []string    { return f.names }

func (f namedBool) Unwrap() cli.Flag        { return f.BoolFlag }
func (f namedString) Unwrap() cli.Flag      { return f.StringFlag }
func (f namedStringSlice) Unwrap() cli.Flag { return f.StringSliceFlag }
func (f namedInt) Unwrap() cli.Flag         { return f.IntFlag }
func (f namedDuration) Unwrap() cli.Flag    { return f.DurationFlag }

// keepNames returns f in the wrapper of its type, which keeps its names;
// a flag of another type as it is.
func keepNames(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case *cli.BoolFlag:
		return namedBool{f, f.Names()}
	case *cli.StringFlag:
		return namedString{f, f.Names()}
	case *cli.StringSliceFlag:
		return namedStringSlice{f, f.Names()}
	case *cli.IntFlag:
		return namedInt{f, f.Names()}
	case *cli.DurationFlag:
		return namedDuration{f, f.Names()}
	}
	return f
}
