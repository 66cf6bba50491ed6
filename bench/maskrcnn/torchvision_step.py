"""torchvision's side of `dtrain-bench-maskrcnn`: Mask R-CNN R50-FPN training steps and
inference on the same weights and images dtrain uses, on the CPU or a GPU, in float32 or
mixed precision, for several batch sizes and precisions in one process.

Usage:
  torchvision_step.py WORKDIR --prepare --images N --min-size M
      writes WORKDIR/weights.pth and WORKDIR/inputs.pth (N images with their targets), the
      starting point both sides load
  torchvision_step.py WORKDIR --configs 2:off,4:bfloat16 --steps S --warmup W --threads T
                      [--device cpu|cuda] [--min-size M] [--score-threshold X]
                      [--channels-last] [--profile-dir DIR]
      prints one JSON line per configuration (images:precision):
      {"images", "amp", "train_step_s": [...], "inference_s": [...], "peak_gpu_mb",
       "peak_rss_mb", "detections": [...]}
      With --profile-dir, the timed steps are followed by profiled ones whose trace goes to
      DIR/torchvision_<images>_<amp>.json (step_profile.py reads it).
"""
import argparse
import json
import resource
import time
from typing import Dict, List, Optional

import torch
from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
from torchvision.ops.misc import FrozenBatchNorm2d

AMP_TYPES = {"off": None, "float16": torch.float16, "bfloat16": torch.bfloat16}
# The phases step_profile.py reports; dtrain's model marks the same names.
PHASES = {"transform": "mask_rcnn.inputs", "backbone": "mask_rcnn.backbone", "rpn": "mask_rcnn.rpn",
          "roi_heads": "mask_rcnn.roi_heads"}


def build_model(min_size: int, score_threshold: float) -> MaskRCNN:
    """Fine-tuning setup: frozen batch norm, the last three stages trainable.

    torchvision's default score threshold (0.05) leaves a random model without detections; a
    threshold of 0 makes inference run the mask head and mask pasting on 100 detections per
    image, as a trained model on a busy image does.
    """
    backbone = resnet_fpn_backbone(backbone_name="resnet50", weights=None, norm_layer=FrozenBatchNorm2d,
                                   trainable_layers=3)
    return MaskRCNN(backbone, num_classes=91, min_size=min_size, max_size=1333, box_score_thresh=score_threshold)


def prepare(workdir: str, images: int, min_size: int) -> None:
    """Writes the random weights and the inputs (images of 480x640, 4 boxes and masks each)."""
    torch.manual_seed(0)
    torch.save(build_model(min_size, 0.05).state_dict(), f"{workdir}/weights.pth")
    generator = torch.Generator().manual_seed(1)
    inputs = {}
    for i in range(images):
        inputs[f"image{i}"] = torch.rand(3, 480, 640, generator=generator)
        boxes, masks = [], []
        for _ in range(4):
            x1, y1 = [float(v) for v in torch.randint(0, 320, (2,), generator=generator)]
            w, h = [float(v) for v in torch.randint(40, 160, (2,), generator=generator)]
            boxes.append([x1, y1, x1 + w, y1 + h])
            mask = torch.zeros(480, 640, dtype=torch.uint8)
            mask[int(y1):int(y1 + h), int(x1):int(x1 + w)] = 1
            masks.append(mask)
        inputs[f"target{i}_boxes"] = torch.tensor(boxes)
        inputs[f"target{i}_labels"] = torch.randint(1, 91, (4,), generator=generator)
        inputs[f"target{i}_masks"] = torch.stack(masks)
    torch.save(inputs, f"{workdir}/inputs.pth")


def annotate_phases(model: MaskRCNN) -> None:
    """Wraps the model's parts in profiler ranges named as dtrain's (free when not profiling)."""
    for attribute, name in PHASES.items():
        module = getattr(model, attribute)
        forward = module.forward

        def wrapped(*args, _forward=forward, _name=name, **kwargs):
            with torch.profiler.record_function(_name):
                return _forward(*args, **kwargs)

        module.forward = wrapped


class Runner:
    """One model on one device, stepped and timed for any batch size and precision."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.device = torch.device(args.device)
        self.on_gpu = self.device.type == "cuda"
        model = build_model(args.min_size, args.score_threshold)
        model.load_state_dict(torch.load(f"{args.workdir}/weights.pth"))
        annotate_phases(model)
        model.to(self.device)
        if args.channels_last:
            model.to(memory_format=torch.channels_last)
        self.model = model
        inputs = torch.load(f"{args.workdir}/inputs.pth")
        count = sum(1 for key in inputs if key.startswith("image"))
        self.images = [inputs[f"image{i}"].to(self.device) for i in range(count)]
        self.targets = [{key: inputs[f"target{i}_{key}"].to(self.device) for key in ("boxes", "labels", "masks")}
                        for i in range(count)]
        params = [p for p in model.parameters() if p.requires_grad]
        # PyTorch's default SGD: the multi-tensor (foreach) implementation on GPUs.
        self.optimizer = torch.optim.SGD(params, lr=1e-4, momentum=0.9)

    def synchronize(self) -> None:
        if self.on_gpu:
            torch.cuda.synchronize(self.device)

    def autocast(self, amp: str):
        return torch.autocast(self.device.type, dtype=AMP_TYPES[amp], enabled=AMP_TYPES[amp] is not None)

    def train_step(self, images: int, amp: str, scaler: Optional["torch.amp.GradScaler"]) -> float:
        """torchvision's reference training: autocast around the forward pass, GradScaler for float16."""
        self.synchronize()
        start = time.perf_counter()
        with torch.profiler.record_function("bench.step"):
            with torch.profiler.record_function("bench.forward"):
                with self.autocast(amp):
                    losses = self.model(self.images[:images], self.targets[:images])
                loss = sum(losses.values())
            with torch.profiler.record_function("bench.backward"):
                self.optimizer.zero_grad()
                (scaler.scale(loss) if scaler else loss).backward()
            with torch.profiler.record_function("bench.optimizer"):
                if scaler:
                    scaler.step(self.optimizer)
                    scaler.update()
                else:
                    self.optimizer.step()
            self.synchronize()
        return time.perf_counter() - start

    def inference(self, images: int, amp: str) -> (float, List[int]):
        self.synchronize()
        start = time.perf_counter()
        with torch.no_grad(), self.autocast(amp):
            detections = self.model(self.images[:images])
        self.synchronize()
        return time.perf_counter() - start, [int(d["boxes"].shape[0]) for d in detections]

    def measure(self, images: int, amp: str, warmup: int, steps: int, profile_dir: Optional[str]) -> Dict:
        if images > len(self.images):
            raise SystemExit(f"torchvision_step.py: {images} images asked for, the inputs hold {len(self.images)}")
        scaler = None
        if amp == "float16":
            scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
        self.model.train()
        for _ in range(warmup):  # allocator, cuDNN's choices, first-call costs
            self.train_step(images, amp, scaler)
        if self.on_gpu:
            torch.cuda.reset_peak_memory_stats(self.device)
        train_times, skipped_steps = [], 0
        for _ in range(steps):
            scale = scaler.get_scale() if scaler else None  # read outside the timed step
            train_times.append(self.train_step(images, amp, scaler))
            # GradScaler lowers its scale exactly when it skipped a step's update (inf or NaN).
            skipped_steps += int(scaler is not None and scaler.get_scale() < scale)
        peak_gpu_mb = torch.cuda.max_memory_allocated(self.device) / 2**20 if self.on_gpu else 0.0
        if profile_dir:
            self.profile(images, amp, scaler, f"{profile_dir}/torchvision_{images}_{amp}.json")
        self.model.eval()
        self.inference(images, amp)
        inference_times, detections = [], []
        for _ in range(steps):
            elapsed, detections = self.inference(images, amp)
            inference_times.append(elapsed)
        return {"images": images, "amp": amp, "train_step_s": train_times, "inference_s": inference_times,
                "peak_gpu_mb": peak_gpu_mb,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                "detections": detections, "skipped_steps": skipped_steps}

    def profile(self, images: int, amp: str, scaler, path: str, steps: int = 3) -> None:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.on_gpu:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as profiler:
            for _ in range(steps):
                self.train_step(images, amp, scaler)
        profiler.export_chrome_trace(path)


def parse_configs(text: str) -> List[tuple]:
    configs = []
    for item in text.split(","):
        images, _, amp = item.partition(":")
        if amp not in AMP_TYPES:
            raise SystemExit(f"torchvision_step.py: bad configuration '{item}' (want images:off|float16|bfloat16)")
        configs.append((int(images), amp))
    return configs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir")
    parser.add_argument("--prepare", action="store_true")
    parser.add_argument("--images", type=int, default=2)
    parser.add_argument("--configs", default="2:off")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--score-threshold", type=float, default=0.05)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--min-size", type=int, default=512)
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--profile-dir")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.prepare:
        prepare(args.workdir, args.images, args.min_size)
        return
    if args.device == "cuda":
        # PyTorch's defaults: TF32 in cuDNN convolutions, not in matrix products.
        torch.backends.cudnn.benchmark = False
    runner = Runner(args)
    for images, amp in parse_configs(args.configs):
        print(json.dumps(runner.measure(images, amp, args.warmup, args.steps, args.profile_dir)), flush=True)


if __name__ == "__main__":
    main()
