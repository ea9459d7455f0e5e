// `inplacectl completion bash|zsh`: a shell completion script made from the command tree itself, so that it
// knows every command, subcommand and flag the program has. It completes command names, flags, the values of
// flags with fixed choices, and file names for flags that take a file. zsh runs the same function through
// its bash compatibility layer (bashcompinit).
import type { Command, Option } from 'commander';

/** The shells a script is made for. */
export const SHELLS = ['bash', 'zsh'] as const;

interface Level {
  path: string;
  subs: string[];
  flags: string[];
}

function flagsOf(options: readonly Option[]): string[] {
  return options.flatMap((o) => [o.short, o.long].filter((f): f is string => !!f));
}

function levels(cmd: Command, path: string, inherited: readonly Option[]): Level[] {
  // A command without subcommands whose first argument has fixed choices (completion <shell>) offers those.
  const choices = cmd.commands.length === 0 ? (cmd.registeredArguments[0]?.argChoices ?? []) : [];
  const own: Level = { path, subs: [...cmd.commands.map((c) => c.name()), ...choices], flags: [...flagsOf([...inherited, ...cmd.options]), '--help'] };
  return [own, ...cmd.commands.flatMap((c) => levels(c, path ? `${path} ${c.name()}` : c.name(), inherited))];
}

function allOptions(cmd: Command): Option[] {
  return [...cmd.options, ...cmd.commands.flatMap(allOptions)];
}

const q = (s: string) => `"${s.replace(/["\\$`]/g, '\\$&')}"`;

/** The completion script of prog for shell; `source <(inplacectl completion bash)` loads it. */
export function completionScript(prog: Command, shell: (typeof SHELLS)[number]): string {
  const name = prog.name();
  const fn = `_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;
  // The program's own options are taken before and after a subcommand (commander's default).
  const all = levels(prog, '', prog.options);
  const options = allOptions(prog);
  const takesValue = [...new Set(options.filter((o) => o.required || o.optional).flatMap((o) => flagsOf([o])))];
  const choiceCases = options
    .filter((o) => o.argChoices && o.argChoices.length > 0)
    .map((o) => `    ${flagsOf([o]).join('|')}) COMPREPLY=($(compgen -W ${q(o.argChoices!.join(' '))} -- "$cur")); return ;;`);
  const fileFlags = [...new Set(options.filter((o) => /<file>/.test(o.flags)).flatMap((o) => flagsOf([o])))];
  const subCases = all.filter((l) => l.subs.length > 0).map((l) => `    ${q(l.path)}) echo ${q(l.subs.join(' '))} ;;`);
  const flagCases = all.map((l) => `    ${q(l.path)}) echo ${q([...new Set(l.flags)].join(' '))} ;;`);
  const body = `${fn}_subs() {
  case "$1" in
${subCases.join('\n')}
  esac
}
${fn}_flags() {
  case "$1" in
${flagCases.join('\n')}
  esac
}
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" path="" w i skip=0
  local takes_value=${q(` ${takesValue.join(' ')} `)}
  if [ "$COMP_CWORD" -gt 0 ]; then prev="\${COMP_WORDS[COMP_CWORD-1]}"; fi
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    case "$w" in
      --*=*) ;;
      -*) case "$takes_value" in *" $w "*) skip=1 ;; esac ;;
      *) case " $(${fn}_subs "$path") " in *" $w "*) path="\${path:+$path }$w" ;; esac ;;
    esac
  done
  case "$prev" in
${choiceCases.join('\n')}
${fileFlags.length > 0 ? `    ${fileFlags.join('|')}) COMPREPLY=($(compgen -f -- "$cur")); return ;;` : ''}
  esac
  case "$takes_value" in *" $prev "*) COMPREPLY=(); return ;; esac
  case "$cur" in
    -*) COMPREPLY=($(compgen -W "$(${fn}_flags "$path")" -- "$cur")) ;;
    *) COMPREPLY=($(compgen -W "$(${fn}_subs "$path")" -- "$cur")) ;;
  esac
}
complete -F ${fn} ${name}
`;
  if (shell === 'bash') return `# bash completion for ${name}; load it with: source <(${name} completion bash)\n${body}`;
  return `# zsh completion for ${name}; load it with: source <(${name} completion zsh) (after compinit)
if ! whence compdef >/dev/null; then autoload -U +X compinit && compinit; fi
autoload -U +X bashcompinit && bashcompinit
${body}`;
}
