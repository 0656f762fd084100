; OOM001 loss-tensor-kept: a value that may hold an autograd graph is stored where it
; outlives the training or evaluation step. The host decides whether the value is
; graph-attached, whether the container outlives the step, and how costly it is.

; losses.append(loss)
(call
  function: (attribute
    object: (_) @container
    attribute: (identifier) @method (#eq? @method "append"))
  arguments: (argument_list . (_) @value .)) @store

; losses.extend([loss])
(call
  function: (attribute
    object: (_) @container
    attribute: (identifier) @method (#eq? @method "extend"))
  arguments: (argument_list . (list (_) @value) .)) @store

; losses += [loss]
(augmented_assignment
  left: (_) @container
  operator: "+="
  right: (list (_) @value)) @store

; total += loss
(augmented_assignment
  left: [(identifier) (attribute)] @container
  operator: "+="
  right: (_) @value) @store

; total = total + loss
(assignment
  left: (identifier) @container
  right: (binary_operator
    left: (identifier) @accumulator
    operator: "+"
    right: (_) @value)
  (#eq? @container @accumulator)) @store

; history[step] = loss
(assignment
  left: (subscript value: (_) @container)
  right: (_) @value) @store
