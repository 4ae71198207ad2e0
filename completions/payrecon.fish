# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_payrecon_global_optspecs
    string join \n config= h/help V/version
end

function __fish_payrecon_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_payrecon_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_payrecon_using_subcommand
    set -l cmd (__fish_payrecon_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c payrecon -n "__fish_payrecon_needs_command" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_needs_command" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_needs_command" -s V -l version -d 'Print version'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "serve" -d 'Daemon: scheduled runs, HTTP endpoints, graceful SIGTERM/SIGINT'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "run" -d 'One reconciliation pass (a backfill with --since), then exit'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "migrate" -d 'Create or upgrade the schema, then exit'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "check" -d 'Validate config, reach database, providers and chain RPCs; report each'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "demo" -d 'Self-contained sandbox: simulated provider + chain, SQLite, one run'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "status" -d 'Read-only operator view: last runs, recent gaps, open findings, resends, inbox, leases'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "events" -d 'Events to your application: list them (read-only), or replay delivered/dead ones'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "exceptions" -d 'Exceptions waiting for a person: list, show, accept, attach or dismiss them'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "export" -d 'Credited payments for finance, one row each: CSV (RFC 4180) or JSON lines (read-only)'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "orders" -d 'Register expected payments: one (add), or a CSV file of them (import)'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "balances" -d 'Deposit addresses\' balances against the ledger: the last checks (read-only), or check now'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "operators" -d 'The console\'s operators ([console] operators_file): add one, or remove one'
complete -c payrecon -n "__fish_payrecon_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand serve" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand serve" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand run" -l since -d 'Start of the window: RFC 3339, a date (2026-11-01) or a duration back (90m, 36h, 7d)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand run" -l until -d 'End of the window (same forms). Default: now' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand run" -l provider -d 'Only this provider (repeatable)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand run" -l format -r -f -a "text\t''
json\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand run" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand run" -l dry-run -d 'Compute and report everything, write nothing'
complete -c payrecon -n "__fish_payrecon_using_subcommand run" -l no-resend -d 'Apply transitions but request no resends'
complete -c payrecon -n "__fish_payrecon_using_subcommand run" -l fail-on-gaps -d 'Exit 3 if the run found at least one gap (and nothing failed)'
complete -c payrecon -n "__fish_payrecon_using_subcommand run" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand migrate" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand migrate" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand check" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand check" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand demo" -l dir -d 'Where to keep the demo ledger (default: a new temporary directory)' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand demo" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand demo" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand status" -l format -r -f -a "text\t''
json\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand status" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand status" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and not __fish_seen_subcommand_from replay help" -l status -d 'Only events in this state' -r -f -a "pending\t''
dead\t''
delivered\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and not __fish_seen_subcommand_from replay help" -l order -d 'Only the events of this order (its order_ref)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and not __fish_seen_subcommand_from replay help" -l limit -d 'At most this many (the newest)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and not __fish_seen_subcommand_from replay help" -l format -r -f -a "text\t''
json\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and not __fish_seen_subcommand_from replay help" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and not __fish_seen_subcommand_from replay help" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and not __fish_seen_subcommand_from replay help" -f -a "replay" -d 'Put delivered or dead events back in the queue, ids unchanged'
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and not __fish_seen_subcommand_from replay help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and __fish_seen_subcommand_from replay" -l id -d 'One event, by its id (the webhook-id)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and __fish_seen_subcommand_from replay" -l order -d 'Every event of this order' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and __fish_seen_subcommand_from replay" -l since -d 'Every event written since T (RFC 3339, a date, or a duration back: 90m, 36h, 7d)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and __fish_seen_subcommand_from replay" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and __fish_seen_subcommand_from replay" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and __fish_seen_subcommand_from help" -f -a "replay" -d 'Put delivered or dead events back in the queue, ids unchanged'
complete -c payrecon -n "__fish_payrecon_using_subcommand events; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -l status -d 'Which exceptions' -r -f -a "open\t''
resolved\t''
all\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -l kind -d 'Only exceptions of this kind' -r -f -a "amount_mismatch\t''
late_payment\t''
unknown_payment\t''
reorged\t''
unexpected_outflow\t''
balance_mismatch\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -l order -d 'Only the exceptions of this order (its order_ref)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -l limit -d 'At most this many (the newest)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -l format -r -f -a "text\t''
json\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -f -a "show" -d 'One exception in full'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -f -a "accept" -d 'A held order (amount_mismatch, late_payment): advance it to the state its payments have'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -f -a "attach" -d 'A payment to no order (unknown_payment): credit it to an order; the chain decides its state'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -f -a "dismiss" -d 'Close it with the ledger unchanged (refunded elsewhere, a test payment)'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and not __fish_seen_subcommand_from show accept attach dismiss help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from show" -l format -r -f -a "text\t''
json\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from show" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from accept" -l reason -d 'Why (kept on the exception, with who and when)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from accept" -l by -d 'Who decides. Default: $SUDO_USER, then $USER' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from accept" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from accept" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from attach" -l order -d 'The order to credit the payment to (its order_ref)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from attach" -l reason -d 'Why (kept on the exception, with who and when)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from attach" -l by -d 'Who decides. Default: $SUDO_USER, then $USER' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from attach" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from attach" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from dismiss" -l reason -d 'Why (kept on the exception, with who and when)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from dismiss" -l by -d 'Who decides. Default: $SUDO_USER, then $USER' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from dismiss" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from dismiss" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from help" -f -a "show" -d 'One exception in full'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from help" -f -a "accept" -d 'A held order (amount_mismatch, late_payment): advance it to the state its payments have'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from help" -f -a "attach" -d 'A payment to no order (unknown_payment): credit it to an order; the chain decides its state'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from help" -f -a "dismiss" -d 'Close it with the ledger unchanged (refunded elsewhere, a test payment)'
complete -c payrecon -n "__fish_payrecon_using_subcommand exceptions; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand export" -l since -d 'Payments in blocks at or after T: RFC 3339, a date (2026-11-01) or a duration back (7d). Default: the beginning' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand export" -l until -d 'Payments in blocks before T (same forms). Default: now' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand export" -l format -r -f -a "csv\t''
json\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand export" -l output -d 'Write here (created or truncated before anything is read). Default: standard output' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand export" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand export" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and not __fish_seen_subcommand_from add import help" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and not __fish_seen_subcommand_from add import help" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and not __fish_seen_subcommand_from add import help" -f -a "add" -d 'Register one expected payment (the same again changes nothing; exit 1 when the ref is registered with other fields, 2 when a field is invalid)'
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and not __fish_seen_subcommand_from add import help" -f -a "import" -d 'Register every row of a CSV file (header order_ref,chain,pay_to,asset,amount_due, expires_at,reference; the last two optional), committed per 1,000 rows; bad rows are named by line, the good ones kept'
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and not __fish_seen_subcommand_from add import help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -l ref -d 'The shop\'s order id (1 to 128 characters, unique)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -l chain -d 'A configured chain' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -l pay-to -d 'The deposit address, by the chain\'s rules' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -l asset -d '`native`, or a token contract with an [assets] table' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -l amount -d 'The amount due in base units (25 USDT = 25000000)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -l expires-at -d 'When the order stops taking payments (RFC 3339)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -l reference -d 'Solana only: the order\'s Solana Pay reference (base58 of 32 bytes)' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -l format -r -f -a "text\t''
json\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from import" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from import" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from help" -f -a "add" -d 'Register one expected payment (the same again changes nothing; exit 1 when the ref is registered with other fields, 2 when a field is invalid)'
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from help" -f -a "import" -d 'Register every row of a CSV file (header order_ref,chain,pay_to,asset,amount_due, expires_at,reference; the last two optional), committed per 1,000 rows; bad rows are named by line, the good ones kept'
complete -c payrecon -n "__fish_payrecon_using_subcommand orders; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and not __fish_seen_subcommand_from check help" -l chain -d 'Only this chain\'s addresses' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and not __fish_seen_subcommand_from check help" -l format -r -f -a "text\t''
json\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and not __fish_seen_subcommand_from check help" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and not __fish_seen_subcommand_from check help" -l mismatched -d 'Only the addresses with a difference nothing explains'
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and not __fish_seen_subcommand_from check help" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and not __fish_seen_subcommand_from check help" -f -a "check" -d 'Check now: each deposit address of the orders created within [balances] lookback, at the chain\'s final block; prints a run report (exit 1 when a chain could not be checked)'
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and not __fish_seen_subcommand_from check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and __fish_seen_subcommand_from check" -l chain -d 'Only this chain\'s addresses' -r
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and __fish_seen_subcommand_from check" -l format -r -f -a "text\t''
json\t''"
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and __fish_seen_subcommand_from check" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and __fish_seen_subcommand_from help" -f -a "check" -d 'Check now: each deposit address of the orders created within [balances] lookback, at the chain\'s final block; prints a run report (exit 1 when a chain could not be checked)'
complete -c payrecon -n "__fish_payrecon_using_subcommand balances; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and not __fish_seen_subcommand_from add remove help" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and not __fish_seen_subcommand_from add remove help" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and not __fish_seen_subcommand_from add remove help" -f -a "add" -d 'Add an operator, or give one a new password: read at a prompt without echo (twice), or one line of stdin when it is not a terminal; written as an argon2id hash'
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and not __fish_seen_subcommand_from add remove help" -f -a "remove" -d 'Remove an operator'
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and not __fish_seen_subcommand_from add remove help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and __fish_seen_subcommand_from add" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and __fish_seen_subcommand_from remove" -l config -d 'Configuration file' -r -F
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and __fish_seen_subcommand_from remove" -s h -l help -d 'Print help'
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add an operator, or give one a new password: read at a prompt without echo (twice), or one line of stdin when it is not a terminal; written as an argon2id hash'
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and __fish_seen_subcommand_from help" -f -a "remove" -d 'Remove an operator'
complete -c payrecon -n "__fish_payrecon_using_subcommand operators; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "serve" -d 'Daemon: scheduled runs, HTTP endpoints, graceful SIGTERM/SIGINT'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "run" -d 'One reconciliation pass (a backfill with --since), then exit'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "migrate" -d 'Create or upgrade the schema, then exit'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "check" -d 'Validate config, reach database, providers and chain RPCs; report each'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "demo" -d 'Self-contained sandbox: simulated provider + chain, SQLite, one run'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "status" -d 'Read-only operator view: last runs, recent gaps, open findings, resends, inbox, leases'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "events" -d 'Events to your application: list them (read-only), or replay delivered/dead ones'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "exceptions" -d 'Exceptions waiting for a person: list, show, accept, attach or dismiss them'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "export" -d 'Credited payments for finance, one row each: CSV (RFC 4180) or JSON lines (read-only)'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "orders" -d 'Register expected payments: one (add), or a CSV file of them (import)'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "balances" -d 'Deposit addresses\' balances against the ledger: the last checks (read-only), or check now'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "operators" -d 'The console\'s operators ([console] operators_file): add one, or remove one'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and not __fish_seen_subcommand_from serve run migrate check demo status events exceptions export orders balances operators help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from events" -f -a "replay" -d 'Put delivered or dead events back in the queue, ids unchanged'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from exceptions" -f -a "show" -d 'One exception in full'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from exceptions" -f -a "accept" -d 'A held order (amount_mismatch, late_payment): advance it to the state its payments have'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from exceptions" -f -a "attach" -d 'A payment to no order (unknown_payment): credit it to an order; the chain decides its state'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from exceptions" -f -a "dismiss" -d 'Close it with the ledger unchanged (refunded elsewhere, a test payment)'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from orders" -f -a "add" -d 'Register one expected payment (the same again changes nothing; exit 1 when the ref is registered with other fields, 2 when a field is invalid)'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from orders" -f -a "import" -d 'Register every row of a CSV file (header order_ref,chain,pay_to,asset,amount_due, expires_at,reference; the last two optional), committed per 1,000 rows; bad rows are named by line, the good ones kept'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from balances" -f -a "check" -d 'Check now: each deposit address of the orders created within [balances] lookback, at the chain\'s final block; prints a run report (exit 1 when a chain could not be checked)'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from operators" -f -a "add" -d 'Add an operator, or give one a new password: read at a prompt without echo (twice), or one line of stdin when it is not a terminal; written as an argon2id hash'
complete -c payrecon -n "__fish_payrecon_using_subcommand help; and __fish_seen_subcommand_from operators" -f -a "remove" -d 'Remove an operator'
