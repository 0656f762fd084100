; OOM010 retry-inside-except: an `except` clause. The host checks that it catches an
; out-of-memory error and looks in its block for a call that runs the network again (or
; repeats the call the `try` made).
(except_clause) @handler
