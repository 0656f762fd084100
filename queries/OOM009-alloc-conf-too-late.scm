; OOM009 alloc-conf-too-late: the allocator's configuration variable set from Python,
; as `os.environ["PYTORCH_CUDA_ALLOC_CONF"] = value`, `os.environ.setdefault(NAME,
; value)` or `os.putenv(NAME, value)`. The host resolves `os`, checks whether CUDA was
; used earlier in the same code, and reads the option names in a literal value.
(assignment
  left: (subscript
    value: (_) @environ
    subscript: (string) @name)
  right: (_) @value) @set

(call
  function: (attribute
    object: (_) @environ
    attribute: (identifier) @method)
  arguments: (argument_list
    .
    (string) @name
    .
    (_) @value)
  (#any-of? @method "setdefault" "putenv")) @set
