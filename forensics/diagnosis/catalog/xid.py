"""NVIDIA Xids: how the kernel, the device plugin and DCGM print them, and what each means.

`XIDS` is NVIDIA's Xid catalog for Ampere and newer GPUs (A100, H100, B100, GB200), every code
1-172: mnemonic, description, and the catalog's two resolution buckets, what to do now and what
to investigate if it recurs (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html; the
mnemonics are the driver's own, src/common/sdk/nvidia/inc/nverror.h in NVIDIA's
open-gpu-kernel-modules). A code that catalog marks unused keeps the name the older GPUs' table
gives it (docs.nvidia.com/deploy/xid-errors, r555), since a Volta or Turing node can still log it.

The fault catalog's entries (`gpu.py`) group the codes by what to do; `Xid.category` sorts the
rest by their immediate bucket, so that an Xid no entry names is still a fault, a reset, or a
notice that needs no action, as NVIDIA says, rather than a bare number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

_PREFIX = r"(?:\bXid \(PCI:[^)]*\):\s*|\b(?:Xid|XID)[=: ]\s*)"
"""What comes before an Xid's number: the kernel's `NVRM: Xid (PCI:...): `, the device plugin's
`Xid=`, DCGM's `Detected XID `."""


def xid(*codes: int) -> str:
    """An Xid with one of `codes`, as the kernel (`NVRM: Xid (PCI:...): 79,`), the device plugin
    (`Xid=79`) and DCGM (`Detected XID 79 for GPU 0`) print it."""
    return rf"{_PREFIX}(?:{'|'.join(map(str, codes))})\b"


class XidCategory(StrEnum):
    """What an Xid asks of the operator, from its immediate resolution bucket."""

    APPLICATION = "application"
    """RESTART_APP: an engine exception the running program raised or met; the GPU stays usable."""
    RESET = "reset"
    """RESET_GPU and the Xid 48 / NVLink workflows: the GPU must be reset before it serves again."""
    REBOOT = "reboot"
    """RESTART_BM / RESTART_VM: the node (or VM) must restart."""
    SERVICE = "service"
    """CHECK_MECHANICALS, UPDATE_SWFW, CHECK_UVM, CONTACT_SUPPORT: hardware, firmware or driver service."""
    NOTICE = "notice"
    """IGNORE, XID_154 and Xid 45's workflow: a report about the GPU or another Xid; no action of its own."""
    UNLISTED = "unlisted"
    """In the catalog without a resolution bucket (the newest codes)."""
    UNUSED = "unused"
    """Unused on Ampere and newer: an older GPU's code."""


_CATEGORY = {
    "RESTART_APP": XidCategory.APPLICATION,
    "RESET_GPU": XidCategory.RESET,
    "WORKFLOW_XID_48": XidCategory.RESET,
    "WORKFLOW_NVLINK_ERR": XidCategory.RESET,
    "WORKFLOW_NVLINK5_ERR": XidCategory.RESET,
    "RESTART_BM": XidCategory.REBOOT,
    "RESTART_VM": XidCategory.REBOOT,
    "CHECK_MECHANICALS": XidCategory.SERVICE,
    "UPDATE_SWFW": XidCategory.SERVICE,
    "CHECK_UVM": XidCategory.SERVICE,
    "CONTACT_SUPPORT": XidCategory.SERVICE,
    "IGNORE": XidCategory.NOTICE,
    "XID_154": XidCategory.NOTICE,
    "WORKFLOW_XID_45": XidCategory.NOTICE,
}

_SAYS = {
    "RESTART_APP": "restart the application",
    "RESET_GPU": "reset the GPU",
    "WORKFLOW_XID_48": "reset the GPU (NVIDIA's Xid 48 workflow: RMA when the SRAM error threshold is exceeded)",
    "WORKFLOW_NVLINK_ERR": "reset the GPU (NVIDIA's NVLink error workflow)",
    "WORKFLOW_NVLINK5_ERR": "reset the GPU (NVIDIA's NVLink 5 error workflow, by the error's subcode)",
    "RESTART_BM": "restart the node",
    "RESTART_VM": "restart the VM",
    "CHECK_MECHANICALS": "check the board's power cabling and seating",
    "UPDATE_SWFW": "update the driver or firmware",
    "CHECK_UVM": "check the UVM driver",
    "CONTACT_SUPPORT": "contact NVIDIA support",
    "IGNORE": "none",
    "XID_154": "the one it names",
    "WORKFLOW_XID_45": "none of its own (follow the Xid it came with; alone, restart the fabric manager)",
}
"""The catalog's immediate buckets, in words: what the report's reader does first."""

_INVESTIGATE = {
    "CONTACT_SUPPORT": "contact NVIDIA support",
    "CHECK_APP/CUDA": "check the application and its CUDA calls",
    "WORKFLOW_XID_13": "run the application under compute-sanitizer or cuda-gdb (NVIDIA's Xid 13 workflow)",
    "WORKFLOW_XID_31": "run the application under compute-sanitizer or cuda-gdb (NVIDIA's Xid 31 workflow)",
    "WORKFLOW_XID_48": "follow NVIDIA's Xid 48 workflow (RMA when the SRAM error threshold is exceeded)",
    "WORKFLOW_NVLINK5_ERR": "follow NVIDIA's NVLink 5 workflow for the error's subcode",
    "INVESTIGATE_SW": "investigate the driver and software",
    "INVESTIGATE_SW_USER": "investigate software or a user's action",
    "INVESTIGATE_LINK_SI": "investigate the link's signal integrity",
    "XID_137_FLOW": "follow NVIDIA's Xid 137 flow (an illegal NVLink peer access: usually the application)",
    "UPDATE_SWFW": "update the driver or firmware",
    "SYMPATHETIC_REPORT_SOLO": "report it to NVIDIA when it comes alone (with others it is their echo)",
}
"""The catalog's investigatory buckets, in words: what to look into when the Xid recurs."""


@dataclass(frozen=True)
class Xid:
    """One row of NVIDIA's Xid catalog."""

    code: int
    mnemonic: str
    """The driver's name for it (`ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS`)."""
    description: str
    """The catalog's words ("GPU has fallen off the bus"); for an unused code, the older GPUs' name."""
    immediate: str
    """Resolution bucket, immediate action (`RESET_GPU`); "" where the catalog lists none."""
    investigate: str
    """Resolution bucket, investigatory action: what to look into when it recurs."""
    category: XidCategory

    def describe(self) -> str:
        """`Xid 95: Uncontained memory error (ROBUST_CHANNEL_UNCONTAINED_ERROR); NVIDIA's immediate
        action: reset the GPU`, for the report's why-lines."""
        head = f"Xid {self.code}: {self.description} ({self.mnemonic})"
        if self.category is XidCategory.UNUSED:
            return (
                f"{head}; unused on Ampere and newer GPUs: the name is the older GPUs' table's (NVIDIA's Xid catalog)"
            )
        if not self.immediate:
            return f"{head}; NVIDIA's Xid catalog lists no action for it"
        later = _INVESTIGATE.get(self.investigate)
        then = f"; if it recurs, {later} ({self.investigate})" if later else ""
        return f"{head}; NVIDIA's immediate action: {_SAYS[self.immediate]} ({self.immediate}){then}"


# code | mnemonic | description (Ampere and newer; "-" unused) | immediate | investigatory | older GPUs' name
_TABLE = """
  1 | ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD | - |  |  | Invalid or corrupted push buffer stream
  2 | ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD | - |  |  | Invalid or corrupted push buffer stream
  3 | ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD | - |  |  | Invalid or corrupted push buffer stream
  4 | ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY | - |  |  | Invalid or corrupted push buffer stream, or GPU semaphore timeout
  5 | ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW | - |  |  |
  6 | ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR | - |  |  | Invalid or corrupted push buffer stream
  7 | ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR | - |  |  | Invalid or corrupted push buffer address
  8 | ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT | GPU stopped processing | RESTART_APP | CONTACT_SUPPORT |
  9 | ROBUST_CHANNEL_GR_ERROR_INSTANCE | - |  |  | Driver error programming GPU
 10 | ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP | - |  |  |
 11 | ROBUST_CHANNEL_GR_ERROR_MISSING_HW | Invalid or corrupted push buffer stream | RESTART_APP | CHECK_APP/CUDA |
 12 | ROBUST_CHANNEL_GR_ERROR_SW_METHOD | - |  |  | Driver error handling GPU exception
 13 | ROBUST_CHANNEL_GR_EXCEPTION | Graphics Engine Exception | RESTART_APP | WORKFLOW_XID_13 |
 14 | ROBUST_CHANNEL_FAKE_ERROR | Fake or injected error from userspace | IGNORE | CONTACT_SUPPORT |
 15 | ROBUST_CHANNEL_SCANLINE_TIMEOUT | - |  |  |
 16 | ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT | - |  |  | Display engine hung
 17 | ROBUST_CHANNEL_PARAMETER_ERROR | - |  |  |
 18 | ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR | - |  |  | Bus mastering disabled in PCI Config Space
 19 | ROBUST_CHANNEL_DISP_MISSED_NOTIFIER | - |  |  | Display Engine error
 20 | ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD | - |  |  | Invalid or corrupted Mpeg push buffer
 21 | ROBUST_CHANNEL_ME_ERROR_SW_METHOD | - |  |  | Invalid or corrupted Motion Estimation push buffer
 22 | ROBUST_CHANNEL_VP_ERROR_SW_METHOD | - |  |  | Invalid or corrupted Video Processor push buffer
 23 | ROBUST_CHANNEL_RC_LOGGING_ENABLED | - |  |  |
 24 | ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT | - |  |  | GPU semaphore timeout
 25 | ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY | Invalid or illegal push buffer stream | RESTART_APP | CHECK_APP/CUDA |
 26 | ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT | - |  |  | Framebuffer timeout
 27 | ROBUST_CHANNEL_VP_ERROR | - |  |  | Video processor exception
 28 | ROBUST_CHANNEL_VP2_ERROR | - |  |  | Video processor exception
 29 | ROBUST_CHANNEL_BSP_ERROR | - |  |  | Video processor exception
 30 | ROBUST_CHANNEL_BAD_ADDR_ACCESS | - |  |  | GPU semaphore access error
 31 | ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT | GPU memory page fault | RESTART_APP | WORKFLOW_XID_31 |
 32 | ROBUST_CHANNEL_PBDMA_ERROR | Invalid or corrupted push buffer stream | RESTART_APP | CHECK_APP/CUDA |
 33 | ROBUST_CHANNEL_SEC_ERROR | - |  |  | Internal micro-controller error
 34 | ROBUST_CHANNEL_MSVLD_ERROR | - |  |  | Video processor exception
 35 | ROBUST_CHANNEL_MSPDEC_ERROR | - |  |  | Video processor exception
 36 | ROBUST_CHANNEL_MSPPP_ERROR | - |  |  | Video processor exception
 37 | ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD | Driver firmware error | IGNORE | CHECK_APP/CUDA |
 38 | ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT | Driver firmware error | IGNORE | CONTACT_SUPPORT |
 39 | ROBUST_CHANNEL_CE0_ERROR | Copy Engine Exception | RESTART_APP | CONTACT_SUPPORT |
 40 | ROBUST_CHANNEL_CE1_ERROR | Copy Engine Exception | RESTART_APP | CONTACT_SUPPORT |
 41 | ROBUST_CHANNEL_CE2_ERROR | Copy Engine Exception | RESTART_APP | CONTACT_SUPPORT |
 42 | ROBUST_CHANNEL_VIC_ERROR | - |  |  | Video processor exception
 43 | ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR | GPU stopped processing | IGNORE | CONTACT_SUPPORT |
 44 | ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW | Graphics Engine fault during context switch | IGNORE | CONTACT_SUPPORT |
 45 | ROBUST_CHANNEL_PREEMPTIVE_REMOVAL | Preemptive cleanup, due to previous errors | WORKFLOW_XID_45 |  |
 46 | ROBUST_CHANNEL_GPU_TIMEOUT_ERROR | GPU stopped processing | RESET_GPU | CONTACT_SUPPORT |
 47 | ROBUST_CHANNEL_NVENC0_ERROR | - |  |  | Video processor exception
 48 | ROBUST_CHANNEL_GPU_ECC_DBE | Double Bit ECC Error | WORKFLOW_XID_48 | WORKFLOW_XID_48 |
 49 | SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY | - |  |  |
 50 | SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR | - |  |  |
 51 | SILENT_RUNNING_STRESS_TEST_FAILURE | - |  |  |
 52 | SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE | - |  |  |
 53 | SILENT_RUNNING_TEMP_REDUCED_CLOCKING | - |  |  |
 54 | SILENT_RUNNING_PWR_REDUCED_CLOCKING | Auxiliary power is not connected to the GPU board | CHECK_MECHANICALS | CONTACT_SUPPORT |
 55 | SILENT_RUNNING_TEMPERATURE_READ_ERROR | - |  |  |
 56 | DISPLAY_CHANNEL_EXCEPTION | - |  |  | Display Engine error
 57 | FB_LINK_TRAINING_FAILURE_ERROR | - |  |  | Error programming video memory interface
 58 | FB_MEMORY_ERROR | - |  |  | Unstable video memory interface detected, or EDC error
 59 | PMU_ERROR | - |  |  | Internal micro-controller error (older drivers)
 60 | ROBUST_CHANNEL_SEC2_ERROR | Video processor exception | RESTART_APP | INVESTIGATE_SW |
 61 | PMU_BREAKPOINT | - |  |  | Internal micro-controller breakpoint/warning (newer drivers)
 62 | PMU_HALT_ERROR | Internal micro-controller halt (newer drivers) | RESET_GPU | CONTACT_SUPPORT |
 63 | INFOROM_DRAM_RETIREMENT_EVENT | GPU memory remapping event | IGNORE | IGNORE |
 64 | INFOROM_DRAM_RETIREMENT_FAILURE | GPU memory remapping failure | RESET_GPU | CONTACT_SUPPORT |
 65 | ROBUST_CHANNEL_NVENC1_ERROR | - |  |  | Video processor exception
 66 | ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION | Illegal access by driver | IGNORE | INVESTIGATE_SW |
 67 | ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION | Illegal access by driver | IGNORE | CONTACT_SUPPORT |
 68 | ROBUST_CHANNEL_NVDEC0_ERROR | NVDEC0 Exception | RESTART_APP | CONTACT_SUPPORT |
 69 | ROBUST_CHANNEL_GR_CLASS_ERROR | Graphics Engine class error | RESTART_APP | CHECK_APP/CUDA |
 70 | ROBUST_CHANNEL_CE3_ERROR | CE3: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
 71 | ROBUST_CHANNEL_CE4_ERROR | CE4: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
 72 | ROBUST_CHANNEL_CE5_ERROR | CE5: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
 73 | ROBUST_CHANNEL_NVENC2_ERROR | - |  |  | NVENC2 Error
 74 | NVLINK_ERROR | NVLINK Error | WORKFLOW_NVLINK_ERR | CONTACT_SUPPORT |
 75 | ROBUST_CHANNEL_CE6_ERROR | CE6: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
 76 | ROBUST_CHANNEL_CE7_ERROR | CE7: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
 77 | ROBUST_CHANNEL_CE8_ERROR | CE8: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
 78 | VGPU_START_ERROR | vGPU Start Error | UPDATE_SWFW | UPDATE_SWFW |
 79 | ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS | GPU has fallen off the bus | RESTART_BM | CONTACT_SUPPORT |
 80 | PBDMA_PUSHBUFFER_CRC_MISMATCH | Corrupted data sent to GPU | RESTART_APP | CHECK_APP/CUDA |
 81 | ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR | - |  |  | VGA Subsystem Error
 82 | ROBUST_CHANNEL_NVJPG0_ERROR | NVJPG0 Error | RESTART_APP | CONTACT_SUPPORT |
 83 | ROBUST_CHANNEL_NVDEC1_ERROR | NVDEC1 Error | RESTART_APP | CONTACT_SUPPORT |
 84 | ROBUST_CHANNEL_NVDEC2_ERROR | NVDEC2 Error | RESTART_APP | CONTACT_SUPPORT |
 85 | ROBUST_CHANNEL_CE9_ERROR | CE9: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
 86 | ROBUST_CHANNEL_OFA0_ERROR | OFA Exception | RESTART_APP | CONTACT_SUPPORT |
 87 | NVTELEMETRY_DRIVER_REPORT | - |  |  |
 88 | ROBUST_CHANNEL_NVDEC3_ERROR | NVDEC3 Error | RESTART_APP | CONTACT_SUPPORT |
 89 | ROBUST_CHANNEL_NVDEC4_ERROR | NVDEC4 Error | RESTART_APP | CONTACT_SUPPORT |
 90 | LTC_ERROR | - |  |  |
 91 | RESERVED_XID | - |  |  |
 92 | EXCESSIVE_SBE_INTERRUPTS | High single-bit ECC error rate | IGNORE | CONTACT_SUPPORT |
 93 | INFOROM_ERASE_LIMIT_EXCEEDED | Non-fatal violation of provisioned InfoROM wear limit | IGNORE | CONTACT_SUPPORT |
 94 | ROBUST_CHANNEL_CONTAINED_ERROR | Contained memory error | RESTART_APP | IGNORE (sympathetic) |
 95 | ROBUST_CHANNEL_UNCONTAINED_ERROR | Uncontained memory error | RESET_GPU | IGNORE (sympathetic) |
 96 | ROBUST_CHANNEL_NVDEC5_ERROR | NVDEC5 Error | RESTART_APP | CONTACT_SUPPORT |
 97 | ROBUST_CHANNEL_NVDEC6_ERROR | NVDEC6 Error | RESTART_APP | CONTACT_SUPPORT |
 98 | ROBUST_CHANNEL_NVDEC7_ERROR | NVDEC7 Error | RESTART_APP | CONTACT_SUPPORT |
 99 | ROBUST_CHANNEL_NVJPG1_ERROR | NVJPG1 Error | RESTART_APP | CONTACT_SUPPORT |
100 | ROBUST_CHANNEL_NVJPG2_ERROR | NVJPG2 Error | RESTART_APP | CONTACT_SUPPORT |
101 | ROBUST_CHANNEL_NVJPG3_ERROR | NVJPG3 Error | RESTART_APP | CONTACT_SUPPORT |
102 | ROBUST_CHANNEL_NVJPG4_ERROR | NVJPG4 Error | RESTART_APP | CONTACT_SUPPORT |
103 | ROBUST_CHANNEL_NVJPG5_ERROR | NVJPG5 Error | RESTART_APP | CONTACT_SUPPORT |
104 | ROBUST_CHANNEL_NVJPG6_ERROR | NVJPG6 Error | RESTART_APP | CONTACT_SUPPORT |
105 | ROBUST_CHANNEL_NVJPG7_ERROR | NVJPG7 Error | RESTART_APP | CONTACT_SUPPORT |
106 | SMBPBI_TEST_MESSAGE | SMBPBI Test Message | IGNORE | IGNORE |
107 | SMBPBI_TEST_MESSAGE_SILENT | SMBPBI Test Message Silent | IGNORE | IGNORE |
108 | NVLINK_REMOTE_TRANSLATION_ERROR | - | IGNORE | XID_137_FLOW |
109 | ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR | Context Switch Timeout Error | RESET_GPU | CONTACT_SUPPORT |
110 | SEC_FAULT_ERROR | Security Fault Error | RESET_GPU | INVESTIGATE_SW |
111 | BUNDLE_ERROR_EVENT | - |  |  | Display Bundle Error Event
112 | DISP_SUPERVISOR_ERROR | - |  |  | Display Supervisor Error
113 | DP_LT_FAILURE | - |  |  | DP Link Training Error
114 | HEAD_RG_UNDERFLOW | - |  |  | Display Pipeline Underflow Error
115 | CORE_CHANNEL_REGS | - |  |  | Display Core Channel Error
116 | WINDOW_CHANNEL_REGS | - |  |  | Display Window Channel Error
117 | CURSOR_CHANNEL_REGS | - |  |  | Display Cursor Channel Error
118 | HEAD_REGS | - |  |  | Display Pixel Pipeline Error
119 | GSP_RPC_TIMEOUT | GSP RPC Timeout | RESET_GPU | INVESTIGATE_SW |
120 | GSP_ERROR | GSP Error | RESET_GPU | INVESTIGATE_SW |
121 | C2C_ERROR | C2C Error | IGNORE | CONTACT_SUPPORT |
122 | SPI_PMU_RPC_READ_FAIL | - |  |  | SPI PMU RPC Read Failure
123 | SPI_PMU_RPC_WRITE_FAIL | - |  |  | SPI PMU RPC Write Failure
124 | SPI_PMU_RPC_ERASE_FAIL | - |  |  | SPI PMU RPC Erase Failure
125 | INFOROM_FS_ERROR | - |  |  | Inforom FS Failure
126 | ROBUST_CHANNEL_CE10_ERROR | CE10: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
127 | ROBUST_CHANNEL_CE11_ERROR | CE11: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
128 | ROBUST_CHANNEL_CE12_ERROR | CE12: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
129 | ROBUST_CHANNEL_CE13_ERROR | CE13: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
130 | ROBUST_CHANNEL_CE14_ERROR | CE14: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
131 | ROBUST_CHANNEL_CE15_ERROR | CE15: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
132 | ROBUST_CHANNEL_CE16_ERROR | CE16: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
133 | ROBUST_CHANNEL_CE17_ERROR | CE17: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
134 | ROBUST_CHANNEL_CE18_ERROR | CE18: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
135 | ROBUST_CHANNEL_CE19_ERROR | CE19: Unknown Error | RESTART_APP | CONTACT_SUPPORT |
136 | ALI_TRAINING_FAIL | Link Training Failed | RESET_GPU | INVESTIGATE_LINK_SI |
137 | NVLINK_PRIV_ERR | NVLink Privilege Error | IGNORE | XID_137_FLOW |
138 | ROBUST_CHANNEL_DLA_ERROR | - |  |  |
139 | ROBUST_CHANNEL_OFA1_ERROR | OFA1 Error | RESTART_APP | CONTACT_SUPPORT |
140 | UNRECOVERABLE_ECC_ERROR_ESCAPE | ECC Unrecovered Error | RESET_GPU | CONTACT_SUPPORT |
141 | ROBUST_CHANNEL_FAST_PATH_ERROR | CUDA Fast Path Error | IGNORE | CONTACT_SUPPORT |
142 | ROBUST_CHANNEL_NVENC3_ERROR | NVENC3 Error | CONTACT_SUPPORT |  |
143 | GPU_INIT_ERROR | GPU Initialization Error | RESET_GPU | CONTACT_SUPPORT |
144 | NVLINK_SAW_ERROR | NVLINK: SAW Error | WORKFLOW_NVLINK5_ERR | WORKFLOW_NVLINK5_ERR |
145 | NVLINK_RLW_ERROR | NVLINK: RLW Error | WORKFLOW_NVLINK5_ERR | WORKFLOW_NVLINK5_ERR |
146 | NVLINK_TLW_ERROR | NVLINK: TLW Error | WORKFLOW_NVLINK5_ERR | WORKFLOW_NVLINK5_ERR |
147 | NVLINK_TREX_ERROR | NVLINK: TREX Error | WORKFLOW_NVLINK5_ERR | WORKFLOW_NVLINK5_ERR |
148 | NVLINK_NVLPW_CTRL_ERROR | NVLINK: NVLPW_CTRL Error | WORKFLOW_NVLINK5_ERR | WORKFLOW_NVLINK5_ERR |
149 | NVLINK_NETIR_ERROR | NVLINK: NETIR Error | WORKFLOW_NVLINK5_ERR | WORKFLOW_NVLINK5_ERR |
150 | NVLINK_MSE_ERROR | NVLINK: MSE Error | WORKFLOW_NVLINK5_ERR | WORKFLOW_NVLINK5_ERR |
151 | ROBUST_CHANNEL_KEY_ROTATION_ERROR | Key rotation Error | RESTART_VM | CONTACT_SUPPORT |
152 | ROBUST_CHANNEL_DLA_SMMU_ERROR | DLA SMMU Error | IGNORE | CONTACT_SUPPORT |
153 | ROBUST_CHANNEL_DLA_TIMEOUT | DLA timeout Error | IGNORE | CONTACT_SUPPORT |
154 | GPU_RECOVERY_ACTION_CHANGED | GPU Recovery Action Changed | XID_154 |  |
155 | NVLINK_SW_DEFINED_ERROR | NVLINK: SW Defined Error | RESET_GPU | INVESTIGATE_SW_USER |
156 | RESOURCE_RETIREMENT_EVENT | Resource Retirement Event | RESET_GPU | IGNORE |
157 | RESOURCE_RETIREMENT_FAILURE | Resource Retirement Failure | IGNORE | CONTACT_SUPPORT |
158 | GPU_FATAL_TIMEOUT | GPU Fatal Timeout | RESET_GPU | CONTACT_SUPPORT |
159 | ROBUST_CHANNEL_CHI_NON_DATA_ERROR | CHI Non-Data Error | CHECK_UVM | SYMPATHETIC_REPORT_SOLO |
160 | CHANNEL_RETIREMENT_EVENT | Channel Retirement Event | IGNORE | INVESTIGATE_SW |
161 | CHANNEL_RETIREMENT_FAILURE | Channel Retirement Failure | IGNORE | INVESTIGATE_SW |
162 | PSHC_REENGAGED | Power Smoothing HW Circuitry capability reengaged |  |  |
163 | PSHC_DISENGAGED | Power Smoothing HW Circuitry capability disengaged |  |  |
164 | PSHC_LOW_LIFETIME | Power Smoothing HW Circuitry low lifetime reached |  |  |
165 | PSHC_ZERO_LIFETIME | Power Smoothing HW Circuitry lifetime exhausted |  |  |
166 | NVLINK_SECURE_CRYPTO_ERR | CC traffic seen prior to link properly being configured for encrypted traffic |  |  |
167 | PCIE_FATAL_TIMEOUT | PCIe fatal timeout |  |  |
168 | REDUCED_GPU_MEMORY_CAPACITY | Errors found in WPR (write protected region) |  |  |
169 | SEC2_HALT_ERROR | Internal micro-controller halt |  |  |
170 | NVLINK_SECURE_OTHER | Interrupt seen in CC mode |  |  |
171 | UNCORRECTABLE_DRAM_ERROR | Uncorrectable DRAM error (details an Xid 48) |  |  |
172 | UNCORRECTABLE_SRAM_ERROR | Uncorrectable SRAM error (details an Xid 48) |  |  |
"""


def _rows() -> dict[int, Xid]:
    out: dict[int, Xid] = {}
    for line in _TABLE.strip().splitlines():
        code, mnemonic, description, immediate, investigate, older = (c.strip() for c in line.split("|"))
        unused = description == "-"
        out[int(code)] = Xid(
            code=int(code),
            mnemonic=mnemonic,
            description=(older or "Unused") if unused else description,
            immediate=immediate,
            investigate=investigate,
            category=XidCategory.UNUSED if unused and not immediate else _CATEGORY.get(immediate, XidCategory.UNLISTED),
        )
    return out


XIDS: dict[int, Xid] = _rows()
"""Every Xid of NVIDIA's catalog, 1-172, by code."""


def codes(*categories: XidCategory, without: frozenset[int] = frozenset()) -> tuple[int, ...]:
    """The catalog's codes in `categories`, less those `without` (what an entry already groups)."""
    return tuple(c for c, x in XIDS.items() if x.category in categories and c not in without)


_CODE = re.compile(_PREFIX + r"(\d+)\b")
RECOVERY = xid(154)
"""The driver's Xid 154, which names the recovery the Xid before it needs (a pattern polars reads too)."""
_RECOVERY = re.compile(r"recovery action changed from 0x[0-9a-f]+ \(([^)]*)\) to 0x[0-9a-f]+ \(([^)]*)\)", re.I)


def recovery(text: str) -> str | None:
    """The recovery an Xid 154 line says the driver now needs ("Node Reboot Required"), or None."""
    m = _RECOVERY.search(text or "")
    return m.group(2) if m is not None else None


def is_recovery(text: str) -> bool:
    """Whether `text` is the driver's Xid 154 (a recovery action, about another Xid)."""
    return re.search(RECOVERY, text or "") is not None


def meaning(text: str) -> str | None:
    """What the first Xid in `text` is, in the Xid catalog's words, with the action NVIDIA gives
    for it (and, for Xid 154, the recovery the driver now asks for); None when the text holds no
    Xid or one past the catalog."""
    m = _CODE.search(text or "")
    if m is None or (found := XIDS.get(int(m.group(1)))) is None:
        return None
    said = found.describe()
    if found.code == 154 and (r := _RECOVERY.search(text)) is not None:
        said += f"; the driver now asks for: {r.group(2)} (was {r.group(1)})"
    return said
