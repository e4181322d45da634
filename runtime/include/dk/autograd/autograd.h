// dk/autograd/autograd.h: everything of the autograd runtime: tensor metadata, graph nodes,
// saved variables, history recording and the backward engine. Tensor's own autograd members
// (requires_grad_, grad, backward, ...) are declared in dk/tensor/tensor.h.
#pragma once

#include "dk/autograd/accumulate_grad.h"
#include "dk/autograd/autograd_meta.h"
#include "dk/autograd/engine.h"
#include "dk/autograd/history.h"
#include "dk/autograd/node.h"
#include "dk/autograd/not_implemented.h"
#include "dk/autograd/saved_variable.h"
#include "dk/core/grad_mode.h"
