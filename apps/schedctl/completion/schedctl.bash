# bash completion for schedctl (installed as share/bash-completion/completions/schedctl).
_schedctl() {
    local cur prev cmd sub
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    local globals="--server --config -o --output --timeout -h --help"
    case "$prev" in
        -f|--file|--config)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        -o|--output)
            COMPREPLY=($(compgen -W "table json" -- "$cur"))
            return ;;
        --status)
            COMPREPLY=($(compgen -W "pending dispatching running succeeded failed timeout killed lost skipped" -- "$cur"))
            return ;;
        --action)
            COMPREPLY=($(compgen -W "create update delete pause resume trigger kill revoke rotate rerun denied" -- "$cur"))
            return ;;
        --role)
            COMPREPLY=($(compgen -W "admin operator viewer executor" -- "$cur"))
            return ;;
        --server|--timeout|--job|--limit|--name|--apps|--note|--since|--actor|--params|--from-step)
            return ;;
    esac
    local i word
    cmd="" sub=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        case "$word" in
            --server|--config|-o|--output|--timeout|-f|--file|--job|--status|--limit|--name|--role|--apps|--note|--since|--actor|--action|--rule)
                ((i++)); continue ;;
            -*) continue ;;
        esac
        if [[ -z "$cmd" ]]; then cmd="$word"; elif [[ -z "$sub" ]]; then sub="$word"; fi
    done
    local words
    case "$cmd" in
        "") words="jobs fires calendars workflows alerts executors cluster tokens audit apply diff $globals" ;;
        jobs)
            if [[ -z "$sub" ]]; then words="list get create update pause resume trigger backfill delete"
            elif [[ "$sub" == pause ]]; then words="--note $globals"
            elif [[ "$sub" == backfill ]]; then words="--from --to --parallel --dry-run $globals"
            else words="-f $globals"; fi ;;
        fires)
            if [[ -z "$sub" ]]; then words="list get log kill"
            else words="--job --status --limit $globals"; fi ;;
        calendars)
            if [[ -z "$sub" ]]; then words="list get apply delete"
            elif [[ "$sub" == apply ]]; then words="-f --dry-run --prune $globals"
            else words="$globals"; fi ;;
        workflows)
            if [[ -z "$sub" ]]; then words="list get create update delete pause resume trigger runs run rerun"
            elif [[ "$sub" == create || "$sub" == update ]]; then words="-f $globals"
            elif [[ "$sub" == trigger ]]; then words="--params $globals"
            elif [[ "$sub" == runs ]]; then words="--limit $globals"
            elif [[ "$sub" == rerun ]]; then words="--from-step $globals"
            else words="$globals"; fi ;;
        alerts)
            if [[ -z "$sub" ]]; then words="list get create update delete test deliveries"
            elif [[ "$sub" == create || "$sub" == update ]]; then words="-f $globals"
            elif [[ "$sub" == deliveries ]]; then words="--rule --status --limit $globals"
            else words="$globals"; fi ;;
        executors) [[ -z "$sub" ]] && words="list" || words="$globals" ;;
        cluster) [[ -z "$sub" ]] && words="status" || words="$globals" ;;
        tokens)
            if [[ -z "$sub" ]]; then words="list create revoke"
            else words="--name --role --apps $globals"; fi ;;
        audit) words="--job --actor --action --since --limit $globals" ;;
        apply) words="-f --dry-run --prune $globals" ;;
        diff) words="-f --prune $globals" ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _schedctl schedctl
