// minfer: a small, fast deep-learning inference runtime. The umbrella header.
#pragma once

#include "minfer/builder.h"
#include "minfer/calibrate.h"
#include "minfer/error.h"
#include "minfer/graph.h"
#include "minfer/image.h"
#include "minfer/io.h"
#include "minfer/kernel.h"
#include "minfer/models.h"
#include "minfer/onnx.h"
#include "minfer/op_schema.h"
#include "minfer/plugin.h"
#include "minfer/registry.h"
#include "minfer/session.h"
#include "minfer/tensor.h"
